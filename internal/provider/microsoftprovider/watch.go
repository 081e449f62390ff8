package microsoftprovider

import (
	"context"
	"fmt"
	"time"

	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// SubscriptionTTL is how long a subscription is asked to live: Graph
// allows at most 4230 minutes for Outlook events.
const SubscriptionTTL = 4230 * time.Minute

// subscription is Graph's subscription resource, as far as oncecall uses it.
type subscription struct {
	ID                 string    `json:"id,omitempty"`
	ChangeType         string    `json:"changeType"`
	NotificationURL    string    `json:"notificationUrl"`
	Resource           string    `json:"resource"`
	ExpirationDateTime time.Time `json:"expirationDateTime"`
	ClientState        string    `json:"clientState"`
}

// Watch creates a subscription to the events of each mailbox's calendar
// (POST /subscriptions): Graph first proves address with a validation
// request (?validationToken=, echoed as text/plain), then posts every
// created, updated or deleted event there with secret as clientState.
func (c *Calendar) Watch(ctx context.Context, calendars []string, address, secret string) ([]calendar.Watched, error) {
	var out []calendar.Watched
	for _, cal := range calendars {
		var got subscription
		err := c.call(ctx, "POST", c.base+"/subscriptions", nil, subscription{
			ChangeType: "created,updated,deleted", NotificationURL: address, Resource: "users/" + cal + "/events",
			ExpirationDateTime: time.Now().Add(SubscriptionTTL).UTC(), ClientState: secret,
		}, &got)
		if err != nil {
			return out, fmt.Errorf("subscribe to the calendar of %s: %w", cal, err)
		}
		out = append(out, calendar.Watched{Calendar: cal, ID: got.ID, Expires: got.ExpirationDateTime})
	}
	return out, nil
}
