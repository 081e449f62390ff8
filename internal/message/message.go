// Package message declares message.send: one SMS or e-mail rendered from a
// template, sent through the messaging provider or, without one, recorded
// in oncecall's outbox table in the same transaction as the action's claim,
// for the business's team: nothing sends it. Identical text never makes
// two intended sends one: only the idempotency key does (or, for a voice
// call, the identity fields including send_ref).
package message

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/wire"
)

// Rejection reasons.
const (
	CustomerNotFound   = "CUSTOMER_NOT_FOUND"
	CustomerHasNoPhone = "CUSTOMER_HAS_NO_PHONE"
	CustomerHasNoEmail = "CUSTOMER_HAS_NO_EMAIL"
)

// Channels.
const (
	SMS   = "sms"
	Email = "email"
)

// Limits, in characters.
const (
	maxVariable  = 1000
	maxVariables = 20
	maxSMS       = 1600 // ten concatenated segments
	maxSubjectID = 200
	maxSendRef   = 100
)

// Operations returns the message operations.
func Operations() []op.Operation { return family.Operations() }

// family collects the operations as they are defined (op.Family).
var family op.Family

// SendInput is the input of message.send. Exactly one of customer_id and to
// names the recipient.
type SendInput struct {
	CustomerID string    `json:"customer_id" format:"uuid" desc:"The customer to send to (their phone for sms, e-mail for email). Give this or to."`
	To         string    `json:"to" maxLength:"254" desc:"The recipient when not a customer: a phone number in international form for sms, an e-mail address for email. Give this or customer_id."`
	Channel    string    `json:"channel" required:"true" enum:"sms,email" desc:"sms or email."`
	Template   string    `json:"template" required:"true" maxLength:"64" pattern:"^[a-z][a-z0-9_]*$" desc:"The message template's name: one of the business's own templates, or a built-in one: appointment_confirmation and appointment_reminder (variables name, when), payment_receipt (name, amount), generic (body, optional subject)."`
	Variables  Variables `json:"variables" desc:"The template's variables, as strings."`
	SubjectID  string    `json:"subject_id" maxLength:"200" desc:"Optional: what the message is about, e.g. the appointment id."`
	SendRef    string    `json:"send_ref" maxLength:"100" desc:"Optional: a new value sends the same message again on purpose; leave it unchanged when retrying."`
}

// Send queues one message.
var Send = family.Add(op.Define(op.Spec[SendInput]{
	Name:    "message.send",
	Label:   "Message",
	Version: 1,
	Tool:    "send_message",
	Description: "Send one SMS or e-mail from a template, once per message the caller should get. " +
		"To send the same message again on purpose, give a new send_ref.",
	Logic:   sendOp{},
	PerCall: true,
	Remote:  newSendRemote(),
	Say: op.Phrases{
		// Without a messaging provider the message is only recorded in
		// oncecall's outbox, which nothing sends.
		Confirmed: "The message is recorded for the team, but it has NOT been sent: no messaging service is connected to " +
			"send it. Tell the caller only that the business has a note of it; do not promise that it will arrive.",
		Performed: "The message was handed to the messaging service for sending. You may tell the caller it is on its way; " +
			"do not say it was delivered.",
		Rejected: map[string]string{
			CustomerNotFound:   "The customer record was not found; no message was sent. Confirm who the caller is.",
			CustomerHasNoPhone: "There is no phone number on file for this customer; no text was sent. Offer e-mail or ask for a number.",
			CustomerHasNoEmail: "There is no e-mail address on file for this customer; no e-mail was sent. Offer a text or ask for an address.",
			"":                 "The message was not sent.",
		},
		Pending: "The message is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed; " +
			"do not promise that it will arrive.",
		// The recipient's number or address is not read back to the agent.
		Withhold: []string{"recipient", "to"},
	},
}))

// sendOp is the logic of Send.
type sendOp struct{}

func (sendOp) Normalize(in *SendInput) error { return normalize(in) }

func (sendOp) Identity(in SendInput) []string {
	recipient := "to:" + in.To
	if in.CustomerID != "" {
		recipient = "customer:" + in.CustomerID
	}
	return []string{recipient, in.Channel, in.Template, in.SubjectID, in.SendRef}
}

func (sendOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in SendInput) (idem.Result, error) {
	return execute(ctx, tx, x, in)
}

func normalize(in *SendInput) error {
	in.Channel = strings.ToLower(strings.TrimSpace(in.Channel))
	switch in.Channel {
	case SMS, Email:
	case "":
		return fault.Field("channel", "is required")
	default:
		return fault.Field("channel", "must be sms or email")
	}
	if err := recipient(in); err != nil {
		return err
	}
	// Which variables the template takes is known only in the claim's
	// transaction, which reads the tenant's templates (see lookup): here the
	// name and the values are checked for shape.
	in.Template = strings.TrimSpace(in.Template)
	switch {
	case in.Template == "":
		return fault.Field("template", "is required")
	case !templateNamePattern.MatchString(in.Template):
		return fault.Field("template", "must be a template name such as %s", strings.Join(builtinNames(), " or "))
	}
	if err := variables(in); err != nil {
		return err
	}
	if err := op.First(op.Text("subject_id", &in.SubjectID, maxSubjectID, false),
		op.Text("send_ref", &in.SendRef, maxSendRef, false)); err != nil {
		return err
	}
	// An id is one id however it is cased.
	if id, err := uuid.Parse(in.SubjectID); err == nil && len(in.SubjectID) == 36 {
		in.SubjectID = id.String()
	}
	return nil
}

// recipient checks that exactly one of customer_id and to is given and
// normalises to for the channel.
func recipient(in *SendInput) error {
	in.To = strings.TrimSpace(in.To)
	hasCustomer := strings.TrimSpace(in.CustomerID) != ""
	switch {
	case hasCustomer && in.To != "":
		return fault.Field("to", "must not be given together with customer_id; give one of them")
	case hasCustomer:
		return op.ID("customer_id", &in.CustomerID)
	case in.To == "":
		return fault.Field("to", "is required when customer_id is not given")
	case in.Channel == SMS:
		return op.Phone("to", &in.To)
	}
	return op.Email("to", &in.To)
}

// variables checks the variables' names and values; the template checks
// which it takes. Values are trimmed and NFC; a blank one is an absent one.
func variables(in *SendInput) error {
	if len(in.Variables) > maxVariables {
		return fault.Field("variables", "must have at most %d entries", maxVariables)
	}
	for _, k := range sortedKeys(in.Variables) {
		if !variableNamePattern.MatchString(k) {
			return fault.Field("variables."+shortName(k), "is not a variable of template %s", in.Template)
		}
		v := in.Variables[k]
		if err := op.Text("variables."+k, &v, maxVariable, false); err != nil {
			return err
		}
		if v == "" {
			delete(in.Variables, k) // a blank variable is an absent one
			continue
		}
		in.Variables[k] = v
	}
	if len(in.Variables) == 0 {
		in.Variables = nil // absent and {} are the same input
	}
	return nil
}

// execute renders the message with the template the tenant has now and
// queues it with that text and template version: the outbox row and the
// stored result keep them, so a replay never renders again.
func execute(ctx context.Context, tx *db.Tx, x idem.Exec, in SendInput) (idem.Result, error) {
	text, err := render(ctx, tx, x.TenantID, in)
	if err != nil {
		return idem.Result{}, err
	}
	m := db.NewMessage{
		TenantID: x.TenantID, ActionID: x.ActionID, Recipient: in.To, Channel: in.Channel, Template: in.Template,
		SubjectLine: text.subject, Body: text.body, TemplateVersion: text.version, SubjectID: in.SubjectID, SendRef: in.SendRef,
	}
	if in.CustomerID != "" {
		id := op.MustUUID(in.CustomerID)
		c, err := tx.CustomerByID(ctx, x.TenantID, id)
		if errors.Is(err, db.ErrNotFound) {
			return op.Reject(CustomerNotFound, map[string]string{"customer_id": in.CustomerID})
		}
		if err != nil {
			return idem.Result{}, err
		}
		reason := CustomerHasNoPhone
		m.Recipient = c.Phone
		if in.Channel == Email {
			reason, m.Recipient = CustomerHasNoEmail, c.Email
		}
		if m.Recipient == "" {
			return op.Reject(reason, map[string]string{"customer_id": in.CustomerID})
		}
		m.CustomerID = &id
	}
	msg, err := tx.CreateMessage(ctx, m)
	if err != nil {
		return idem.Result{}, err
	}
	return op.Confirm(http.StatusCreated, msg.ID.String(), wire.FromMessage(msg))
}

// Variables are a template's variables. Decoding names the variable whose
// value is not a string ("variables.when"), which a plain map cannot.
type Variables map[string]string

// UnmarshalJSON accepts an object of strings, or null.
func (v *Variables) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return &json.UnmarshalTypeError{Value: "non-object", Type: reflect.TypeFor[map[string]string]()}
	}
	m := make(Variables, len(raw))
	for _, k := range sortedKeys(raw) {
		var s string
		if err := json.Unmarshal(raw[k], &s); err != nil || string(raw[k]) == "null" {
			return &json.UnmarshalTypeError{Value: "non-string", Type: reflect.TypeFor[string](), Field: k}
		}
		m[k] = s
	}
	*v = m
	return nil
}

// JSONSchema describes the field for op.Schema.
func (Variables) JSONSchema() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Fates of a booking's confirmation message besides a rejection's reason.
const (
	// Queued: a step of the action sends it through the messaging provider.
	Queued = "queued"
	// Recorded: it is in oncecall's outbox for the business's team; no
	// messaging provider is configured, and nothing sends it.
	Recorded = "recorded"
)

// Confirm makes an appointment confirmation for a customer a follow-up of
// the action x, in its transaction, and returns its fate: Queued for the
// messaging provider, Recorded in the outbox without one. Like any
// follow-up it never changes the action's outcome: a customer without a
// phone or e-mail is reported as the fate instead (the rejection's reason).
func Confirm(ctx context.Context, tx *db.Tx, x idem.Exec, customerID, channel, when, subjectID string) (fate string, err error) {
	c, err := tx.CustomerByID(ctx, x.TenantID, op.MustUUID(customerID))
	if err != nil {
		return "", err
	}
	in := SendInput{
		CustomerID: customerID, Channel: channel, Template: "appointment_confirmation",
		Variables: Variables{"name": cmp.Or(c.Name, "there"), "when": when}, SubjectID: subjectID,
	}
	if x.IsRemote(provider.Messaging) {
		reason, err := confirmRemote(ctx, tx, x, c, in)
		return cmp.Or(reason, Queued), err
	}
	res, err := execute(ctx, tx, x, in)
	if fault.CodeOf(err) == fault.InvalidInput {
		// The tenant's own appointment_confirmation did not render for this
		// booking (its text too long for an SMS, say): the booking stands.
		return TemplateNotApplicable, nil
	}
	if err != nil {
		return "", err
	}
	return cmp.Or(res.Reason, Recorded), nil
}

// confirmRemote is Confirm when messaging is remote: the message, rendered
// now, becomes a follow-up step of the action x, recorded in its
// transaction and sent by the driver (the reconciler's next pass) through
// the messaging provider, with the step's provider key, once.
func confirmRemote(ctx context.Context, tx *db.Tx, x idem.Exec, c oncecall.Customer, in SendInput) (reason string, err error) {
	send, reason, err := confirmation(ctx, tx, x, c, in)
	if err != nil || reason != "" {
		return reason, err
	}
	payload, err := json.Marshal(send)
	if err != nil {
		return "", err
	}
	f := ConfirmationFollowUp(in.CustomerID, in.Channel, in.SubjectID)
	scope := x.ActionID.String()
	err = tx.InsertSteps(ctx, x.ActionID, []db.NewStep{{
		Name: f.Name, Capability: f.Capability, Operation: f.Operation, Payload: payload,
		ProviderKey: idem.ProviderKey(scope, f.Name), ExternalRef: scope + "/" + f.Name,
	}})
	if err != nil {
		return "", err
	}
	return "", tx.AddEvent(ctx, x.ActionID, "claimed", "", map[string]int{"steps": 1})
}

// confirmation renders a confirmation for a remote messaging provider:
// the text and the customer's address, or why there is none.
func confirmation(ctx context.Context, tx *db.Tx, x idem.Exec, c oncecall.Customer, in SendInput) (remoteSend, string, error) {
	recipient, reason, err := addressOf(c, in.Channel)
	if err != nil || reason != "" {
		return remoteSend{}, reason, err
	}
	text, err := render(ctx, tx, x.TenantID, in)
	if fault.CodeOf(err) == fault.InvalidInput {
		return remoteSend{}, TemplateNotApplicable, nil
	}
	if err != nil {
		return remoteSend{}, "", err
	}
	send, err := withSender(ctx, tx, x.TenantID, remoteSend{SendInput: in, Recipient: recipient, TemplateVersion: text.version, SubjectLine: text.subject, Body: text.body})
	return send, "", err
}

// ConfirmationPayload is the payload of a booking's remote confirmation
// (the follow-up ConfirmationFollowUp declares), rendered in the claim's
// transaction: the text and the customer's address the messaging provider
// is sent, kept with the step. Nil when there is nothing to render (no such
// customer, no address for the channel, a template that does not apply):
// the follow-up keeps its bare request, which a provider that sends
// messages refuses.
func ConfirmationPayload(ctx context.Context, tx *db.Tx, x idem.Exec, customerID, channel, when, subjectID string) (any, error) {
	c, err := tx.CustomerByID(ctx, x.TenantID, op.MustUUID(customerID))
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	in := SendInput{
		CustomerID: customerID, Channel: channel, Template: "appointment_confirmation",
		Variables: Variables{"name": cmp.Or(c.Name, "there"), "when": when}, SubjectID: subjectID,
	}
	send, reason, err := confirmation(ctx, tx, x, c, in)
	if err != nil || reason != "" {
		return nil, err
	}
	return send, nil
}

// TemplateNotApplicable is the fate of a booking's confirmation when the
// tenant's appointment_confirmation template could not be rendered for it.
const TemplateNotApplicable = "TEMPLATE_NOT_APPLICABLE"

// ConfirmationFollowUp is the remote form of Confirm: a message.send step on
// the messaging capability after the booking step succeeded.
func ConfirmationFollowUp(customerID, channel, subjectID string) op.FollowUp {
	return op.FollowUp{
		Name: "messaging.confirmation", Capability: provider.Messaging, Operation: Send.Name(),
		Payload: SendInput{CustomerID: customerID, Channel: channel, Template: "appointment_confirmation", SubjectID: subjectID},
	}
}
