// Package callback declares the callback operations: a caller asks to be
// called back within a window of the business's wall clock, and may cancel
// it, on oncecall's own tables (written in the same transaction as the
// action's claim).
package callback

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
)

// Rejection reasons.
const (
	CustomerNotFound = "CUSTOMER_NOT_FOUND"
	NotFound         = "CALLBACK_NOT_FOUND"
	NotActive        = "CALLBACK_NOT_ACTIVE"
)

// Bounds of a request.
const (
	maxReason = 500
	maxRef    = 100
	// MaxWindow is the longest window a caller may give, on the wall clock.
	MaxWindow = 14 * 24 * time.Hour
)

// Operations returns the callback operations.
func Operations() []op.Operation { return family.Operations() }

// family collects the operations as they are defined (op.Family).
var family op.Family

// localPattern is a wall-clock date and time without offset: the minute,
// with a T or a space, and seconds only as :00.
const localPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:00)?$`

var localRE = regexp.MustCompile(localPattern)

// RequestInput is the input of callback.request.
type RequestInput struct {
	CustomerID  string `json:"customer_id" format:"uuid" desc:"The customer to call back. Give customer_id or phone (or both)."`
	Phone       string `json:"phone" maxLength:"32" pattern:"^(\\+|[ .()-]*0[ .()-]*0)[ .()-]*[1-9]([ .()-]*[0-9]){7,14}[ .()-]*$" desc:"The number to call back in international form, e.g. +442079460958; needed when the caller has no customer_id."`
	WindowStart string `json:"window_start" required:"true" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:00)?$" desc:"The earliest time to call, as the business's local date and time without offset, e.g. 2030-07-05T14:00."`
	WindowEnd   string `json:"window_end" required:"true" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:00)?$" desc:"The latest time to call, local like window_start, after it and at most 14 days later, e.g. 2030-07-05T16:00."`
	Reason      string `json:"reason" required:"true" minLength:"1" maxLength:"500" desc:"What the caller wants to talk about. Within one call a later request replaces the reason and window of the call's earlier one (same callback_ref): give them whole each time."`
	CallbackRef string `json:"callback_ref" maxLength:"100" desc:"Optional: a new value asks for a separate callback in this call, on purpose; leave it unchanged to amend the call's callback or when retrying."`
}

// Request records a callback. Every wording is its own action (an exact
// retry replays it); within a call, the callback of a customer (or number)
// and callback_ref is one row that a later wording amends.
var Request = family.Add(op.Define(op.Spec[RequestInput]{
	Name:    "callback.request",
	Label:   "Callback request",
	Version: 1,
	Tool:    "request_callback",
	Description: "Arrange for the business to call the caller back, after the caller agreed on the time window (the business's " +
		"local time) and the reason. A call keeps one callback per customer: calling it again in the same call replaces that " +
		"callback's window and reason, so give them whole each time. For a separate second callback on purpose, give a new callback_ref.",
	Logic:   requestOp{},
	PerCall: true,
	Say: op.Phrases{
		Confirmed: "The callback is arranged. You may tell the caller they will be called back in the window in details (when, the business's local time).",
		Rejected: map[string]string{
			CustomerNotFound: "The customer record was not found; no callback was arranged. Confirm who the caller is, or ask for the number to call back.",
			"":               "The callback was not arranged. Tell the caller it could not be saved.",
		},
		Pending: "The callback request is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed.",
		Changed: "This callback was arranged, but it has changed since (see current): it was cancelled, or a later request in the call " +
			"changed its window or reason. Do not repeat these details to the caller as the current ones.",
		// Contact data is not read back to the agent (see get_customer).
		Withhold: []string{"phone"},
	},
}))

// requestOp is the logic of Request. It has no Identity: every field is,
// each wording its own action, amending the call's callback.
type requestOp struct{}

func (requestOp) Normalize(in *RequestInput) error { return normalizeRequest(in) }

// Standing is "cancelled" or "changed" once the call's callback is.
func (requestOp) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, in RequestInput, resourceID string) (string, error) {
	c, ok, err := stored(ctx, s, tenant, resourceID)
	switch {
	case err != nil || !ok:
		return "", err
	case c.Status == oncecall.CallbackCancelled:
		return "cancelled", nil
	case c.Reason != in.Reason || wall(c.WindowStart, c.Timezone) != in.WindowStart || wall(c.WindowEnd, c.Timezone) != in.WindowEnd:
		return "changed", nil
	}
	return "", nil
}

func (requestOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in RequestInput) (idem.Result, error) {
	clock, _, err := tx.TenantClock(ctx, x.TenantID)
	if err != nil {
		return idem.Result{}, err
	}
	zone, loc := clock.Zone, clock.Loc
	start, end := instant(in.WindowStart, loc), instant(in.WindowEnd, loc)
	switch now := time.Now(); {
	case !end.After(start):
		// Only a clock change can do this to wall times in order.
		return idem.Result{}, fault.Field("window_end", "must be after window_start in %s", zone)
	case !end.After(now):
		// A rollback: nothing is claimed, the caller can give a later window.
		return idem.Result{}, fault.Field("window_end", "is in the past: it is %s in %s now", now.In(loc).Format("2006-01-02T15:04"), zone)
	}
	var customer uuid.UUID
	if in.CustomerID != "" {
		customer = op.MustUUID(in.CustomerID)
		ok, err := tx.CustomerExists(ctx, x.TenantID, customer)
		if err != nil {
			return idem.Result{}, err
		}
		if !ok {
			return op.Reject(CustomerNotFound, map[string]string{"customer_id": in.CustomerID})
		}
	}
	c, err := tx.RequestCallback(ctx, oncecall.NewCallback{
		TenantID: x.TenantID, ActionID: x.ActionID, CustomerID: customer, Phone: in.Phone,
		WindowStart: start, WindowEnd: end, Timezone: zone, Reason: in.Reason, CallPlatform: x.CallPlatform, CallID: x.CallID, CallbackRef: in.CallbackRef,
	})
	if err != nil {
		return idem.Result{}, err
	}
	return op.Confirm(http.StatusCreated, c.ID.String(), ViewOf(c, clock.Locale, time.Now()))
}

// CancelInput is the input of callback.cancel.
type CancelInput struct {
	CallbackID string `json:"callback_id" required:"true" format:"uuid" desc:"The id of the callback to cancel (from request_callback's answer)."`
}

// Cancel cancels a requested callback.
var Cancel = family.Add(op.Define(op.Spec[CancelInput]{
	Name:        "callback.cancel",
	Label:       "Callback cancelled",
	Version:     1,
	Tool:        "cancel_callback",
	Description: "Cancel a callback the caller no longer wants, after they confirmed it.",
	Logic:       cancelOp{},
	Say: op.Phrases{
		Confirmed: "The callback is cancelled. You may tell the caller they will not be called back.",
		Rejected: map[string]string{
			NotActive: "That callback was already cancelled; nothing changed.",
			NotFound:  "That callback was not found; nothing was cancelled. Use the callback id from request_callback's answer.",
			"":        "The callback was not cancelled.",
		},
		Pending: "The cancellation is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed.",
		Changed: "This callback was cancelled, but it was requested again since (see current): do not tell the caller it is cancelled.",
		// Contact data is not read back to the agent (see get_customer).
		Withhold: []string{"phone"},
	},
}))

// cancelOp is the logic of Cancel.
type cancelOp struct{}

func (cancelOp) Normalize(in *CancelInput) error { return op.ID("callback_id", &in.CallbackID) }

func (cancelOp) Identity(in CancelInput) []string { return []string{in.CallbackID} }

func (cancelOp) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, _ CancelInput, resourceID string) (string, error) {
	c, ok, err := stored(ctx, s, tenant, resourceID)
	if err != nil || !ok || c.Status == oncecall.CallbackCancelled {
		return "", err
	}
	return "requested again", nil
}

func (cancelOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput) (idem.Result, error) {
	id := op.MustUUID(in.CallbackID)
	clock, _, err := tx.TenantClock(ctx, x.TenantID)
	if err != nil {
		return idem.Result{}, err
	}
	c, ok, err := tx.CancelCallback(ctx, x.TenantID, id)
	if err != nil {
		return idem.Result{}, err
	}
	if ok {
		return op.Confirm(http.StatusOK, c.ID.String(), ViewOf(c, clock.Locale, time.Now()))
	}
	c, err = tx.CallbackByID(ctx, x.TenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		return op.Reject(NotFound, map[string]string{"callback_id": in.CallbackID})
	}
	if err != nil {
		return idem.Result{}, err
	}
	return op.Reject(NotActive, ViewOf(c, clock.Locale, time.Now()))
}

func normalizeRequest(in *RequestInput) error {
	if in.CustomerID == "" && strings.TrimSpace(in.Phone) == "" {
		return fault.Field("customer_id", "or phone is required: who is to be called back")
	}
	if in.CustomerID != "" {
		if err := op.ID("customer_id", &in.CustomerID); err != nil {
			return err
		}
	}
	if in.Phone = strings.TrimSpace(in.Phone); in.Phone != "" {
		if err := op.Phone("phone", &in.Phone); err != nil {
			return err
		}
	}
	if err := op.First(localTime("window_start", &in.WindowStart), localTime("window_end", &in.WindowEnd),
		op.Text("reason", &in.Reason, maxReason, true), op.Text("callback_ref", &in.CallbackRef, maxRef, false)); err != nil {
		return err
	}
	// Wall times compare as text; their real distance is checked once the
	// tenant's zone is known.
	start, end := instant(in.WindowStart, time.UTC), instant(in.WindowEnd, time.UTC)
	switch {
	case !end.After(start):
		return fault.Field("window_end", "must be after window_start")
	case end.Sub(start) > MaxWindow:
		return fault.Field("window_end", "must be at most %d days after window_start", int(MaxWindow/(24*time.Hour)))
	}
	return nil
}

// localTime checks that *v is a wall-clock date and time without offset
// and rewrites it as YYYY-MM-DDTHH:MM, so that "2030-07-05 14:00" and
// "2030-07-05T14:00:00" are the same input.
func localTime(field string, v *string) error {
	s := strings.TrimSpace(*v)
	if s == "" {
		return fault.Field(field, "is required")
	}
	if localRE.MatchString(s) {
		s = s[:10] + "T" + s[11:16]
		if _, err := time.Parse("2006-01-02T15:04", s); err == nil {
			*v = s
			return nil
		}
	}
	return fault.Field(field, "must be a local date and time without offset, such as 2030-07-05T14:00, on the business's clock")
}

// instant is the moment loc's clock shows the wall time v (normalised by
// localTime), by the rules of the schedule's slots: a time the clock skips
// is read with the offset before the change, one it shows twice is the
// first.
func instant(v string, loc *time.Location) time.Time {
	day, _ := time.Parse(time.DateOnly, v[:10])
	minute, _ := schedule.ParseClock(v[11:], false)
	return schedule.At(day, minute, loc)
}

// wall is t on zone's wall clock as localTime writes it.
func wall(t time.Time, zone string) string { return t.In(location(zone)).Format("2006-01-02T15:04") }

// location loads a stored zone; a name the zone database lacks (set
// outside oncecall) is read as UTC, as the read tools do.
func location(zone string) *time.Location {
	loc, err := schedule.ParseZone(zone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// stored reads the callback a completed action names by its resource id;
// ok is false for an id that is no local callback.
func stored(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID string) (oncecall.Callback, bool, error) {
	id, err := uuid.Parse(resourceID)
	if err != nil {
		return oncecall.Callback{}, false, nil //nolint:nilerr // not a callback of ours
	}
	c, err := s.CallbackByID(ctx, tenant, id)
	if errors.Is(err, db.ErrNotFound) {
		return oncecall.Callback{}, false, nil
	}
	return c, err == nil, err
}
