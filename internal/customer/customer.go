// Package customer declares the customer record operations: create, update,
// append a note and add loyalty points, on the local provider (oncecall's
// own tables, written in the same transaction as the action's claim).
// Appends and increments are actions like creations: a replay never adds
// twice.
package customer

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
)

// Rejection reasons.
const (
	NotFound           = "CUSTOMER_NOT_FOUND"
	Exists             = "CUSTOMER_EXISTS"
	InsufficientPoints = "INSUFFICIENT_POINTS"
)

// Limits on text fields, in characters.
const (
	maxName   = 200
	maxRef    = 200
	maxNote   = 2000
	maxReason = 200
	// maxEffectRef bounds points_ref and note_ref, like message's send_ref.
	maxEffectRef = 100
	// maxDelta bounds one change of a points balance.
	maxDelta = 1_000_000_000
)

// Operations returns the customer operations.
func Operations() []op.Operation { return family.Operations() }

// family collects the operations as they are defined (op.Family).
var family op.Family

// pending is what an agent may say while an outcome is not known.
const pending = "The change is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed."

// CreateInput is the input of customer.create.
type CreateInput struct {
	Name        string `json:"name" required:"true" minLength:"1" maxLength:"200" desc:"The customer's name as they gave it."`
	Phone       string `json:"phone" maxLength:"32" pattern:"^(\\+|[ .()-]*0[ .()-]*0)[ .()-]*[1-9]([ .()-]*[0-9]){7,14}[ .()-]*$" desc:"Optional: phone number in international form, e.g. +442079460958."`
	Email       string `json:"email" format:"email" maxLength:"254" desc:"Optional: e-mail address."`
	ExternalRef string `json:"external_ref" maxLength:"200" desc:"Optional: the customer's id in your own system."`
}

// Create creates a customer record. A phone or external reference already
// on file is a definitive rejection carrying the existing customer's id.
var Create = family.Add(op.Define(op.Spec[CreateInput]{
	Name:    "customer.create",
	Label:   "New customer",
	Version: 1,
	Tool:    "create_customer",
	Description: "Create a customer record for a new caller, after confirming their name and phone number. " +
		"If the caller is already on file the answer names the existing customer_id: use it.",
	Logic:  createOp{},
	Remote: op.SendInput[CreateInput](provider.CRM, http.StatusCreated),
	Say: op.Phrases{
		Confirmed: "The customer record is created. You may tell the caller their details are saved.",
		Rejected: map[string]string{
			Exists: "This caller is already on file; no new record was made. Use the customer_id in details.",
			"":     "The customer record was not created. Tell the caller their details could not be saved.",
		},
		Pending: pending,
		Changed: changed,
		// Contact data is not read back to the agent (see get_customer).
		Withhold: contactFields,
	},
}))

// createOp is the logic of Create.
type createOp struct{}

func (createOp) Normalize(in *CreateInput) error {
	return op.First(op.Text("name", &in.Name, maxName, true), optional("phone", &in.Phone, op.Phone),
		optional("email", &in.Email, op.Email), op.Text("external_ref", &in.ExternalRef, maxRef, false))
}

func (createOp) Identity(in CreateInput) []string {
	switch {
	case in.Phone != "":
		return []string{"phone", in.Phone}
	case in.ExternalRef != "":
		return []string{"external_ref", in.ExternalRef}
	}
	return []string{"name", in.Name, "email", in.Email}
}

// A name is not an identity: without a phone, e-mail or external
// reference the same name from another call is another person.
func (createOp) CallScoped(in CreateInput) bool {
	return in.Phone == "" && in.Email == "" && in.ExternalRef == ""
}

func (createOp) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, in CreateInput, resourceID string) (string, error) {
	return standing(ctx, s, tenant, resourceID, func(c oncecall.Customer) bool {
		switch {
		case in.Phone != "":
			return c.Phone == in.Phone
		case in.ExternalRef != "":
			return c.ExternalRef == in.ExternalRef
		}
		return c.Name == in.Name && c.Email == in.Email
	})
}

func (createOp) Statement(s *db.Statement, _ idem.Exec, in CreateInput) {
	s.CreateCustomer(db.NewCustomer{TenantID: s.Tenant(), Name: in.Name, Phone: in.Phone, Email: in.Email, ExternalRef: in.ExternalRef})
}

// UpdateInput is the input of customer.update. Only the fields present
// change; null removes phone, email or external_ref.
type UpdateInput struct {
	CustomerID  string   `json:"customer_id" required:"true" format:"uuid" desc:"The id of the customer to change."`
	Name        op.Patch `json:"name,omitzero" minLength:"1" maxLength:"200" desc:"Optional: the new name. It cannot be removed."`
	Phone       op.Patch `json:"phone,omitzero" maxLength:"32" pattern:"^(\\+|[ .()-]*0[ .()-]*0)[ .()-]*[1-9]([ .()-]*[0-9]){7,14}[ .()-]*$" desc:"Optional: the new phone number in international form, e.g. +442079460958; null removes it."`
	Email       op.Patch `json:"email,omitzero" format:"email" maxLength:"254" desc:"Optional: the new e-mail address; null removes it."`
	ExternalRef op.Patch `json:"external_ref,omitzero" minLength:"1" maxLength:"200" desc:"Optional: the new id in your own system; null removes it."`
}

// Update sets the named fields of a customer. Every update is its own
// action: the same values sent under a new key update again (later
// workflows may hang on it), a retry under the same key does not.
var Update = family.Add(op.Define(op.Spec[UpdateInput]{
	Name:    "customer.update",
	Label:   "Customer details change",
	Version: 1,
	Tool:    "update_customer",
	Description: "Change a customer's name, phone, e-mail or external reference, after the caller has confirmed the new value. " +
		"Send only the fields that change.",
	Logic:   updateOp{},
	PerCall: true,
	Remote:  op.SendInput[UpdateInput](provider.CRM, http.StatusOK),
	Say: op.Phrases{
		Confirmed: "The customer's details are updated. You may tell the caller the change is saved.",
		Rejected: map[string]string{
			NotFound: "The customer record was not found; nothing was changed. Confirm who the caller is.",
			Exists:   "Another customer already has that phone number or reference; nothing was changed. Ask the caller to check it.",
			"":       "The customer's details were not changed. Tell the caller the change could not be saved.",
		},
		Pending: pending,
		Changed: changed,
		// Contact data is not read back to the agent (see get_customer).
		Withhold: contactFields,
	},
}))

// updateOp is the logic of Update.
type updateOp struct{}

func (updateOp) Normalize(in *UpdateInput) error {
	if err := op.ID("customer_id", &in.CustomerID); err != nil {
		return err
	}
	if !in.Name.Set && !in.Phone.Set && !in.Email.Set && !in.ExternalRef.Set {
		return fault.New(fault.InvalidInput, "give at least one of name, phone, email or external_ref to change")
	}
	if in.Name.Set {
		if in.Name.Null {
			return fault.Field("name", "cannot be removed; send a new name instead")
		}
		if err := op.Text("name", &in.Name.Value, maxName, true); err != nil {
			return err
		}
	}
	return op.First(
		patch("phone", &in.Phone, op.Phone),
		patch("email", &in.Email, op.Email),
		patch("external_ref", &in.ExternalRef, func(f string, v *string) error { return op.Text(f, v, maxRef, true) }),
	)
}

func (updateOp) Identity(in UpdateInput) []string {
	return nonEmpty(in.CustomerID, in.Name.Identity("name"), in.Phone.Identity("phone"),
		in.Email.Identity("email"), in.ExternalRef.Identity("external_ref"))
}

func (updateOp) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, in UpdateInput, resourceID string) (string, error) {
	return standing(ctx, s, tenant, resourceID, func(c oncecall.Customer) bool {
		holds := func(p op.Patch, v string) bool { return !p.Set || value(p) == v }
		return holds(in.Name, c.Name) && holds(in.Phone, c.Phone) && holds(in.Email, c.Email) && holds(in.ExternalRef, c.ExternalRef)
	})
}

func (updateOp) Statement(s *db.Statement, _ idem.Exec, in UpdateInput) {
	s.UpdateCustomer(changeOf(s.Tenant(), in))
}

// NoteInput is the input of customer.note.append.
type NoteInput struct {
	CustomerID string `json:"customer_id" required:"true" format:"uuid" desc:"The id of the customer."`
	Text       string `json:"text" required:"true" minLength:"1" maxLength:"2000" desc:"The note to add to the customer's record. Within one call a later note replaces the text of the call's earlier one (same note_ref): give the whole note each time."`
	NoteRef    string `json:"note_ref" maxLength:"100" desc:"Optional: a new value starts a separate note in this call, on purpose; leave it unchanged to amend the call's note or when retrying."`
}

// AppendNote appends a note to a customer record.
var AppendNote = family.Add(op.Define(op.Spec[NoteInput]{
	Name:    "customer.note.append",
	Label:   "Note on a customer",
	Version: 1,
	Tool:    "add_customer_note",
	Description: "Add a note to a customer's record. A call keeps one note per customer: calling it again in the same call " +
		"replaces that note's text, so give the whole note each time (a reworded note is not a second one). For a separate " +
		"second note on purpose, give a new note_ref.",
	Logic: appendNoteOp{},
	// Each wording is its own action (an exact retry replays it); the
	// call's note under note_ref is one row that a later wording amends.
	PerCall: true,
	Remote:  op.SendInput[NoteInput](provider.CRM, http.StatusCreated),
	Say: op.Phrases{
		Confirmed: "The note is saved on the customer's record.",
		Rejected: map[string]string{
			NotFound: "The customer record was not found; the note was not saved. Confirm who the caller is.",
			"":       "The note was not saved.",
		},
		Pending: "The note is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed.",
	},
}))

// appendNoteOp is the logic of AppendNote.
type appendNoteOp struct{}

func (appendNoteOp) Normalize(in *NoteInput) error {
	return op.First(op.ID("customer_id", &in.CustomerID), op.Text("text", &in.Text, maxNote, true),
		op.Text("note_ref", &in.NoteRef, maxEffectRef, false))
}

func (appendNoteOp) Identity(in NoteInput) []string {
	return []string{in.CustomerID, in.NoteRef, in.Text}
}

// A remote CRM is asked to append, not to amend: there a reworded note
// is the same request (answered conflicting_request with the note that
// stands), never a second note.
func (appendNoteOp) RemoteIdentity(in NoteInput) []string { return []string{in.CustomerID, in.NoteRef} }

func (appendNoteOp) Statement(s *db.Statement, _ idem.Exec, in NoteInput) {
	s.AppendNote(op.MustUUID(in.CustomerID), in.Text, in.NoteRef)
}

// PointsInput is the input of customer.points.add.
type PointsInput struct {
	CustomerID string     `json:"customer_id" required:"true" format:"uuid" desc:"The id of the customer."`
	Delta      op.Integer `json:"delta" required:"true" minimum:"-1000000000" maximum:"1000000000" desc:"Points to add, or a negative number to redeem; not zero."`
	Reason     string     `json:"reason" required:"true" minLength:"1" maxLength:"200" desc:"Why the points change, e.g. the visit or reward."`
	PointsRef  string     `json:"points_ref" maxLength:"100" desc:"Optional: within one call, the same delta for the same customer is one change however the reason is worded; a new value makes a deliberate second change of the same size. Leave it unchanged when retrying."`
}

// AddPoints changes a customer's loyalty balance, which never goes below
// zero.
var AddPoints = family.Add(op.Define(op.Spec[PointsInput]{
	Name:    "customer.points.add",
	Label:   "Loyalty points",
	Version: 1,
	Tool:    "add_loyalty_points",
	Description: "Add loyalty points to a customer (or redeem them with a negative delta), once per earned or redeemed reward. " +
		"The balance cannot go below zero. Within one call the same delta for the same customer is one change, however the " +
		"reason is worded; to make a second change of the same size on purpose, give it a new points_ref.",
	Logic: addPointsOp{},
	// One change per call, customer, delta and points_ref: the model's
	// rewording of the reason is a retry, not a second change.
	PerCall: true,
	Remote:  op.SendInput[PointsInput](provider.CRM, http.StatusCreated),
	Say: op.Phrases{
		Confirmed: "The points change is recorded (delta in details). You may tell the caller their balance now, balance_now in details.",
		Rejected: map[string]string{
			InsufficientPoints: "The customer does not have enough points; nothing was redeemed. You may tell the caller their balance from details.",
			NotFound:           "The customer record was not found; no points changed. Confirm who the caller is.",
			"":                 "The points were not changed.",
		},
		Pending: "The points change is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed; " +
			"do not quote a new balance.",
	},
}))

// addPointsOp is the logic of AddPoints.
type addPointsOp struct{}

func (addPointsOp) Normalize(in *PointsInput) error {
	if err := op.First(op.ID("customer_id", &in.CustomerID), op.Int("delta", &in.Delta, -maxDelta, maxDelta),
		op.Text("reason", &in.Reason, maxReason, true)); err != nil {
		return err
	}
	if in.Delta.Int64() == 0 {
		return fault.Field("delta", "must not be zero")
	}
	return op.Text("points_ref", &in.PointsRef, maxEffectRef, false)
}

func (addPointsOp) Identity(in PointsInput) []string {
	return []string{in.CustomerID, strconv.FormatInt(in.Delta.Int64(), 10), in.PointsRef}
}

func (addPointsOp) Restates(_ context.Context, _ *db.Store, _ uuid.UUID, stored, in PointsInput) (bool, error) {
	return stored.CustomerID == in.CustomerID && stored.Delta.Int64() == in.Delta.Int64() && stored.PointsRef == in.PointsRef, nil
}

func (addPointsOp) Statement(s *db.Statement, _ idem.Exec, in PointsInput) {
	s.AddPoints(op.MustUUID(in.CustomerID), in.Delta.Int64(), in.Reason)
}

// contactFields are the customer fields a voice agent is not read back.
var contactFields = []string{"phone", "email"}

// changed is what an agent may say of a customer change that a later one
// overtook.
const changed = "This was saved, but the customer's record has changed since (see current): do not repeat these details " +
	"to the caller as the record's current ones; look the record up again if you need them."

// standing is "" while the customer a local action created or changed (its
// resource id) still satisfies holds, else "changed". A resource id that is
// no local customer is a remote CRM's reference: nothing here to check.
func standing(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID string, holds func(oncecall.Customer) bool) (string, error) {
	cid, err := uuid.Parse(resourceID)
	if err != nil {
		return "", nil //nolint:nilerr // not a local customer
	}
	c, err := s.CustomerByID(ctx, tenant, cid)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	case !holds(c):
		return "changed", nil
	}
	return "", nil
}

// optional normalises a field that may be empty.
func optional(field string, v *string, norm func(string, *string) error) error {
	if strings.TrimSpace(*v) == "" {
		*v = ""
		return nil
	}
	return norm(field, v)
}

// patch normalises the value of a patch field that sets a value; an empty
// value is refused so that "remove" is always spelled null.
func patch(field string, p *op.Patch, norm func(string, *string) error) error {
	if !p.Set || p.Null {
		return nil
	}
	if strings.TrimSpace(p.Value) == "" {
		return fault.Field(field, "must not be empty; send null to remove it")
	}
	return norm(field, &p.Value)
}

func value(p op.Patch) string {
	if p.Null {
		return ""
	}
	return p.Value
}

func name(p op.Patch) *string {
	if !p.Set {
		return nil
	}
	return &p.Value
}

func change(p op.Patch) db.FieldChange { return db.FieldChange{Set: p.Set, Value: value(p)} }

// changeOf is the change in tenant's records that in asks for.
func changeOf(tenant uuid.UUID, in UpdateInput) db.CustomerChange {
	return db.CustomerChange{
		TenantID: tenant, ID: op.MustUUID(in.CustomerID), Name: name(in.Name),
		Phone: change(in.Phone), Email: change(in.Email), ExternalRef: change(in.ExternalRef),
	}
}

func nonEmpty(parts ...string) []string {
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
