package message

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
)

// remoteSend is what a remote messaging provider receives for message.send:
// the request and the text it rendered to when the action was claimed, with
// the template version used. The step keeps it, so every dispatch and every
// recovery sends exactly this text, whatever the template says later.
type remoteSend struct {
	SendInput
	// Recipient is where the message goes: to, or the customer's phone
	// number (sms) or e-mail address (email) as the claim read it.
	Recipient       string `json:"recipient,omitempty"`
	TemplateVersion int    `json:"template_version,omitempty"`
	SubjectLine     string `json:"subject_line,omitempty"`
	Body            string `json:"body"`
	// From and MessagingService are the tenant's own Twilio sender, read
	// at the claim (see db.TwilioSender); empty: the process default.
	From             string `json:"from,omitempty"`
	MessagingService string `json:"messaging_service,omitempty"`
}

// withSender sets the tenant's own Twilio sender, for the payload of a message
// it sends.
func withSender(ctx context.Context, tx *db.Tx, tenant uuid.UUID, m remoteSend) (remoteSend, error) {
	s, err := tx.TenantTwilioSender(ctx, tenant)
	if err != nil {
		return m, err
	}
	m.From, m.MessagingService = s.From, s.MessagingService
	return m, nil
}

// sendRemote sends through the messaging provider. The payload is rendered
// in the claim's transaction, where the tenant's template is read.
type sendRemote struct{ op.Send[SendInput] }

func newSendRemote() sendRemote {
	return sendRemote{op.SendInput[SendInput](provider.Messaging, http.StatusCreated)}
}

// Reserve reads the recipient and renders the message for the payload.
func (sendRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in SendInput) (op.Reservation, error) {
	recipient, reason, err := recipientOf(ctx, tx, x, in)
	if err != nil || reason != "" {
		if err != nil {
			return op.Reservation{}, err
		}
		res, err := op.Reject(reason, map[string]string{"customer_id": in.CustomerID})
		return op.Reservation{Reject: &res}, err
	}
	text, err := render(ctx, tx, x.TenantID, in)
	if err != nil {
		return op.Reservation{}, err
	}
	send, err := withSender(ctx, tx, x.TenantID, remoteSend{
		SendInput: in, Recipient: recipient, TemplateVersion: text.version, SubjectLine: text.subject, Body: text.body,
	})
	return op.Reservation{Payload: send}, err
}

// recipientOf is the address of a message: to, or the customer's phone or
// e-mail address for the channel; reason is the rejection when there is
// none (CUSTOMER_NOT_FOUND, CUSTOMER_HAS_NO_PHONE, CUSTOMER_HAS_NO_EMAIL).
func recipientOf(ctx context.Context, tx *db.Tx, x idem.Exec, in SendInput) (recipient, reason string, err error) {
	if in.CustomerID == "" {
		return in.To, "", nil
	}
	c, err := tx.CustomerByID(ctx, x.TenantID, op.MustUUID(in.CustomerID))
	if errors.Is(err, db.ErrNotFound) {
		return "", CustomerNotFound, nil
	}
	if err != nil {
		return "", "", err
	}
	return addressOf(c, in.Channel)
}

// addressOf is a customer's address for a channel, or the rejection when
// it has none.
func addressOf(c oncecall.Customer, channel string) (recipient, reason string, err error) {
	switch {
	case channel == SMS && c.Phone == "":
		return "", CustomerHasNoPhone, nil
	case channel == Email && c.Email == "":
		return "", CustomerHasNoEmail, nil
	case channel == SMS:
		return c.Phone, "", nil
	}
	return c.Email, "", nil
}

// maxEchoedName bounds how much of an unknown variable's name an error
// repeats.
const maxEchoedName = 40

func shortName(name string) string { return op.Shorten(name, maxEchoedName) }

// LinkTemplate is the template name an SMS carrying a payment link is
// recorded with: its text is oncecall's own, not a tenant's template.
const LinkTemplate = "payment_link"

// LinkSMS is the payload of the step that sends a payment link by SMS to a
// customer's phone: body holds the link as a reference to the result of the
// step that made it (see internal/step), filled in when it is sent.
func LinkSMS(customerID, phone, body, subjectID string, sender db.TwilioSender) any {
	return remoteSend{
		SendInput: SendInput{CustomerID: customerID, Channel: SMS, Template: LinkTemplate, SubjectID: subjectID},
		Recipient: phone, Body: body, From: sender.From, MessagingService: sender.MessagingService,
	}
}
