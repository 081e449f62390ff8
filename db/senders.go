package db

import (
	"context"
	"fmt"
	"regexp"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// TwilioSender is a tenant's own Twilio sender: a number (E.164) or a
// Messaging Service (MG...), at most one of them; both empty: the process
// default (TWILIO_FROM, TWILIO_MESSAGING_SERVICE_SID).
type TwilioSender struct {
	From             string
	MessagingService string
}

var (
	twilioFromPattern    = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	twilioServicePattern = regexp.MustCompile(`^MG[0-9a-fA-F]{32}$`)
)

// Valid reports why s is not a sender a tenant may have, or nil.
func (s TwilioSender) Valid() error {
	switch {
	case s.From != "" && s.MessagingService != "":
		return fmt.Errorf("a tenant has a sender number or a Messaging Service, not both")
	case s.From != "" && !twilioFromPattern.MatchString(s.From):
		return fmt.Errorf("%q is not a phone number in E.164 form (+ and 7 to 15 digits)", s.From)
	case s.MessagingService != "" && !twilioServicePattern.MatchString(s.MessagingService):
		return fmt.Errorf("%q is not a Messaging Service SID (MG and 32 hexadecimal digits)", s.MessagingService)
	}
	return nil
}

// TenantTwilioSender returns the tenant's own Twilio sender (empty: none).
func (q queries) TenantTwilioSender(ctx context.Context, tenant uuid.UUID) (TwilioSender, error) {
	row, err := q.q.TenantTwilioSender(ctx, tenant)
	if err != nil {
		return TwilioSender{}, notFound(err)
	}
	return TwilioSender{From: row.TwilioFrom, MessagingService: row.TwilioMessagingService}, nil
}

// SetTenantTwilioSender sets (or, with an empty sender, clears) the
// tenant's own Twilio sender; ErrNotFound when there is no such tenant.
func (s *Store) SetTenantTwilioSender(ctx context.Context, tenant uuid.UUID, sender TwilioSender) error {
	if err := sender.Valid(); err != nil {
		return err
	}
	n, err := s.q.SetTenantTwilioSender(ctx, dbsqlc.SetTenantTwilioSenderParams{
		ID: tenant, TwilioFrom: ptr(sender.From), TwilioMessagingService: ptr(sender.MessagingService),
	})
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}
