package booking

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
)

// The waitlist: a caller asks to be offered an earlier time with a
// practitioner, for a service, or both, on oncecall's own tables (written
// in the same transaction as the action's claim).

// Rejection reasons of the waitlist.
const (
	WaitlistEntryNotFound  = "WAITLIST_ENTRY_NOT_FOUND"
	WaitlistEntryNotActive = "WAITLIST_ENTRY_NOT_ACTIVE"
)

// maxWaitlistNote bounds a waitlist entry's note.
const maxWaitlistNote = 500

// JoinWaitlistInput is the input of waitlist.join.
type JoinWaitlistInput struct {
	CustomerID     string `json:"customer_id" required:"true" format:"uuid" desc:"The customer to offer an earlier time to."`
	ServiceID      string `json:"service_id" format:"uuid" desc:"The service the caller wants an earlier time for (from list_services). Give service_id or practitioner_id (or both)."`
	PractitionerID string `json:"practitioner_id" format:"uuid" desc:"The practitioner the caller wants an earlier time with (from list_practitioners). Give service_id or practitioner_id (or both)."`
	Before         string `json:"before" format:"date" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}$" desc:"Optional: the caller wants a time before this day, the business's local date YYYY-MM-DD, e.g. 2030-07-05; after today. Leave it out for any earlier time."`
	Note           string `json:"note" maxLength:"500" desc:"Optional: what the caller said about the times that suit them. Within one call a later request replaces the call's entry for the customer (service, practitioner, before and note): give them whole each time."`
}

// joinWaitlist is the operation waitlist.join: every wording is its own
// action (an exact retry replays it); within a call, the entry of a
// customer is one row that a later wording amends.
type joinWaitlist struct{}

// JoinWaitlist puts a customer on the waitlist.
var JoinWaitlist = family.Add(op.Define(op.Spec[JoinWaitlistInput]{
	Name:    "waitlist.join",
	Label:   "Waitlist entry",
	Version: 1,
	Tool:    "join_waitlist",
	Description: "Put the caller on the waitlist to be offered an earlier time for a service or with a practitioner (or both), " +
		"after they asked for one and agreed. A call keeps one waitlist entry per customer: calling it again in the same call " +
		"replaces that entry's service, practitioner, before and note, so give them whole each time.",
	PerCall: true,
	// It has no Identity: every field is, each wording its own action,
	// amending the call's entry.
	Logic: joinWaitlist{},
	Say:   joinWaitlist{}.Say(),
}))

// Normalize checks the form of a request: a customer, a service or a
// practitioner (or both), a date and a note.
func (joinWaitlist) Normalize(in *JoinWaitlistInput) error {
	if err := op.First(op.ID("customer_id", &in.CustomerID), op.OptionalID("service_id", &in.ServiceID),
		op.OptionalID("practitioner_id", &in.PractitionerID)); err != nil {
		return err
	}
	if in.ServiceID == "" && in.PractitionerID == "" {
		return fault.Field("service_id", "or practitioner_id is required: what the earlier time is for")
	}
	return op.First(localDate("before", &in.Before), op.Text("note", &in.Note, maxWaitlistNote, false))
}

// Standing is "cancelled" once the entry was cancelled, "changed" once a
// later request of the call amended it to something else.
func (joinWaitlist) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, in JoinWaitlistInput, resourceID string) (string, error) {
	e, ok, err := storedEntry(ctx, s, tenant, resourceID)
	switch {
	case err != nil || !ok:
		return "", err
	case e.Status == oncecall.WaitlistCancelled:
		return "cancelled", nil
	case idOrEmpty(e.ServiceID) != in.ServiceID || idOrEmpty(e.PractitionerID) != in.PractitionerID ||
		e.Before != in.Before || e.Note != in.Note:
		return "changed", nil
	}
	return "", nil
}

// Execute checks what needs the tenant's data (the date is after today on
// its clock; the customer, service and practitioner are its own) and
// writes the entry.
func (joinWaitlist) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in JoinWaitlistInput) (idem.Result, error) {
	if in.Before != "" {
		clock, _, err := tx.TenantClock(ctx, x.TenantID)
		if err != nil {
			return idem.Result{}, err
		}
		if today := time.Now().In(clock.Loc).Format(time.DateOnly); in.Before <= today {
			// A rollback: nothing is claimed, the caller can give a later date.
			return idem.Result{}, fault.Field("before", "must be after today: it is %s in %s now", today, clock.Zone)
		}
	}
	customer := op.MustUUID(in.CustomerID)
	ok, err := tx.CustomerExists(ctx, x.TenantID, customer)
	if err != nil {
		return idem.Result{}, err
	}
	if !ok {
		return op.Reject(CustomerNotFound, map[string]string{"customer_id": in.CustomerID})
	}
	service, practitioner := op.OptionalUUID(in.ServiceID), op.OptionalUUID(in.PractitionerID)
	if service != uuid.Nil {
		if _, err := tx.ServiceByID(ctx, x.TenantID, service); errors.Is(err, db.ErrNotFound) {
			return op.Reject(ServiceNotFound, map[string]string{"service_id": in.ServiceID})
		} else if err != nil {
			return idem.Result{}, err
		}
	}
	if practitioner != uuid.Nil {
		if _, err := tx.PractitionerByID(ctx, x.TenantID, practitioner); errors.Is(err, db.ErrNotFound) {
			return op.Reject(PractitionerNotFound, map[string]string{"practitioner_id": in.PractitionerID})
		} else if err != nil {
			return idem.Result{}, err
		}
	}
	e, err := tx.JoinWaitlist(ctx, oncecall.NewWaitlistEntry{
		TenantID: x.TenantID, ActionID: x.ActionID, CustomerID: customer, ServiceID: service, PractitionerID: practitioner,
		Before: in.Before, Note: in.Note, CallPlatform: x.CallPlatform, CallID: x.CallID,
	})
	if err != nil {
		return idem.Result{}, err
	}
	return op.Confirm(http.StatusCreated, e.ID.String(), WaitlistViewOf(e))
}

// Say phrases waitlist.join's outcomes.
func (joinWaitlist) Say() op.Phrases {
	return op.Phrases{
		Confirmed: "The caller is on the waitlist: the business's team sees it and may offer an earlier time if one frees up " +
			"(before the date in details.before, when given). Do not promise that one will be offered, or when; " +
			"no appointment is booked or moved by this.",
		Rejected: map[string]string{
			CustomerNotFound: "The customer record was not found; the caller is not on the waitlist. Confirm who the caller is.",
			ServiceNotFound: "That service does not exist; the caller is not on the waitlist. Look the services up with " +
				"list_services.",
			PractitionerNotFound: "That practitioner does not exist; the caller is not on the waitlist. Look the practitioners " +
				"up with list_practitioners.",
			"": "The caller was not put on the waitlist. Tell them it could not be saved.",
		},
		Pending: "The waitlist request is NOT confirmed yet and its result is unknown. Do not say the caller is on the waitlist; " +
			"tell them only that it is still being processed.",
		Changed: "This waitlist entry was made, but it has changed since (see current): it was cancelled, or a later request in " +
			"the call changed what it is for. Do not repeat these details to the caller as the current ones.",
	}
}

// CancelWaitlistInput is the input of waitlist.cancel.
type CancelWaitlistInput struct {
	EntryID string `json:"entry_id" required:"true" format:"uuid" desc:"The id of the waitlist entry to cancel (from join_waitlist's answer)."`
}

// cancelWaitlist is the operation waitlist.cancel.
type cancelWaitlist struct{}

// CancelWaitlist takes a customer off the waitlist.
var CancelWaitlist = family.Add(op.Define(op.Spec[CancelWaitlistInput]{
	Name:        "waitlist.cancel",
	Label:       "Waitlist entry cancelled",
	Version:     1,
	Tool:        "cancel_waitlist_entry",
	Description: "Take the caller off the waitlist (one entry, by its id), after they confirmed they no longer want an earlier time.",
	Logic:       cancelWaitlist{},
	Say:         cancelWaitlist{}.Say(),
}))

// Normalize checks the entry's id.
func (cancelWaitlist) Normalize(in *CancelWaitlistInput) error { return op.ID("entry_id", &in.EntryID) }

// Identity is the entry: cancelling it is one intent however often asked.
func (cancelWaitlist) Identity(in CancelWaitlistInput) []string { return []string{in.EntryID} }

// Standing is "active again" once a later request of the call amended the
// cancelled entry back.
func (cancelWaitlist) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, _ CancelWaitlistInput, resourceID string) (string, error) {
	e, ok, err := storedEntry(ctx, s, tenant, resourceID)
	if err != nil || !ok || e.Status == oncecall.WaitlistCancelled {
		return "", err
	}
	return "active again", nil
}

// Execute cancels the entry, or says why it cannot.
func (cancelWaitlist) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelWaitlistInput) (idem.Result, error) {
	id := op.MustUUID(in.EntryID)
	e, ok, err := tx.CancelWaitlistEntry(ctx, x.TenantID, id)
	if err != nil {
		return idem.Result{}, err
	}
	if ok {
		return op.Confirm(http.StatusOK, e.ID.String(), WaitlistViewOf(e))
	}
	e, err = tx.WaitlistEntryByID(ctx, x.TenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		return op.Reject(WaitlistEntryNotFound, map[string]string{"entry_id": in.EntryID})
	}
	if err != nil {
		return idem.Result{}, err
	}
	return op.Reject(WaitlistEntryNotActive, WaitlistViewOf(e))
}

// Say phrases waitlist.cancel's outcomes.
func (cancelWaitlist) Say() op.Phrases {
	return op.Phrases{
		Confirmed: "The waitlist entry is cancelled. You may tell the caller they will not be offered an earlier time for it.",
		Rejected: map[string]string{
			WaitlistEntryNotActive: "That waitlist entry was already cancelled; nothing changed.",
			WaitlistEntryNotFound:  "That waitlist entry was not found; nothing was cancelled. Use the entry id from join_waitlist's answer.",
			"":                     "The waitlist entry was not cancelled.",
		},
		Pending: "The cancellation is NOT confirmed yet and its result is unknown. Do not say the caller is off the waitlist; " +
			"tell them only that it is still being processed.",
		Changed: "This waitlist entry was cancelled, but a later request in the call put the caller back on the waitlist (see " +
			"current): do not tell the caller it is cancelled.",
	}
}

// WaitlistView is a waitlist entry as answers and GET /v1/waitlist write it.
type WaitlistView struct {
	ID             string `json:"id"`
	CustomerID     string `json:"customer_id"`
	ServiceID      string `json:"service_id,omitempty"`
	PractitionerID string `json:"practitioner_id,omitempty"`
	// Before is the local date the caller wants a time before; absent for
	// any earlier time.
	Before      string     `json:"before,omitempty"`
	Note        string     `json:"note,omitempty"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	AmendedAt   *time.Time `json:"amended_at,omitempty"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
}

// WaitlistViewOf writes e.
func WaitlistViewOf(e oncecall.WaitlistEntry) WaitlistView {
	v := WaitlistView{
		ID: e.ID.String(), CustomerID: e.CustomerID.String(), ServiceID: idOrEmpty(e.ServiceID),
		PractitionerID: idOrEmpty(e.PractitionerID), Before: e.Before, Note: e.Note, Status: string(e.Status),
		CreatedAt: e.CreatedAt.UTC(), AmendedAt: timeOrNil(e.AmendedAt), CancelledAt: timeOrNil(e.CancelledAt),
	}
	return v
}

// WaitlistViews writes a list of entries.
func WaitlistViews(list []oncecall.WaitlistEntry) []WaitlistView {
	out := make([]WaitlistView, len(list))
	for i, e := range list {
		out[i] = WaitlistViewOf(e)
	}
	return out
}

// localDate checks that *v, when given, is a date YYYY-MM-DD and rewrites
// it trimmed.
func localDate(field string, v *string) error {
	s := strings.TrimSpace(*v)
	if s == "" {
		*v = ""
		return nil
	}
	if len(s) == len(time.DateOnly) {
		if _, err := time.Parse(time.DateOnly, s); err == nil {
			*v = s
			return nil
		}
	}
	return fault.Field(field, "must be a date such as 2030-07-05, on the business's clock")
}

// idOrEmpty is id as text, empty for uuid.Nil.
func idOrEmpty(id uuid.UUID) string {
	if id == uuid.Nil {
		return ""
	}
	return id.String()
}

// timeOrNil is t in UTC, nil when zero.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// storedEntry reads the entry a completed action names by its resource
// id; ok is false for an id that is no entry of the tenant.
func storedEntry(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID string) (oncecall.WaitlistEntry, bool, error) {
	id, err := uuid.Parse(resourceID)
	if err != nil {
		return oncecall.WaitlistEntry{}, false, nil //nolint:nilerr // not an entry of ours
	}
	e, err := s.WaitlistEntryByID(ctx, tenant, id)
	if errors.Is(err, db.ErrNotFound) {
		return oncecall.WaitlistEntry{}, false, nil
	}
	return e, err == nil, err
}
