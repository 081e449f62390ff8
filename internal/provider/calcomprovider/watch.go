package calcomprovider

import (
	"context"
	"fmt"
	"strconv"

	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// WebhooksVersion is the API version of /v2/webhooks.
const WebhooksVersion = "2024-08-13"

// Watch creates one webhook of the account (POST /v2/webhooks) for the
// bookings created, rescheduled and cancelled: Cal.com then posts each
// with X-Cal-Signature-256, the hex HMAC-SHA256 of the body with secret.
// The booking's eventTypeId names the calendar; calendars is not needed.
func (c *Calendar) Watch(ctx context.Context, _ []string, address, secret string) ([]calendar.Watched, error) {
	var got struct {
		ID int `json:"id"`
	}
	err := c.call(ctx, "POST", "/v2/webhooks", WebhooksVersion, nil, map[string]any{
		"active": true, "subscriberUrl": address, "secret": secret,
		"triggers": []string{"BOOKING_CREATED", "BOOKING_RESCHEDULED", "BOOKING_CANCELLED"},
	}, &got)
	if err != nil {
		return nil, fmt.Errorf("create the webhook: %w", err)
	}
	return []calendar.Watched{{ID: strconv.Itoa(got.ID)}}, nil
}
