package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
)

// The confirmation gate (a tenant setting, off by default): a voice tool
// call that books, moves or cancels an appointment or charges a payment is
// refused, nothing claimed, unless it carries in caller_confirmed what the
// caller confirmed: the appointment's time (or the amount), checked against
// the slot, the appointment or the intent the call acts on. The refusal says
// the exact sentence to read back and the value to echo; an interim "yes"
// to another time or amount cannot book. The argument is not part of the
// request's identity: the confirmed call is the same request, performed once.
const (
	callerConfirmedArg      = dashatool.CallerConfirmed
	cancelOperation         = "appointment.cancel"
	needsCallerConfirmation = dashatool.NeedsCallerConfirmation
	maxConfirmation         = 200
)

// gated reports whether an operation is behind the confirmation gate.
func gated(operation string) bool { return dashatool.Gated(operation) }

// cutConfirmation takes caller_confirmed out of a tool call's arguments
// (canonical JSON, see voiceCall): the rest are the request's arguments.
// bad is the invalid_arguments answer for arguments that are not an
// object, or a caller_confirmed that is not a short string.
func cutConfirmation(raw json.RawMessage) (confirmed string, rest json.RawMessage, bad *dashatool.Answer) {
	args, bad := toolArguments(raw)
	if bad != nil {
		return "", nil, bad
	}
	v, rest, found := canon.Cut(args, callerConfirmedArg)
	if !found {
		return "", args, nil
	}
	if string(v) != "null" && (json.Unmarshal(v, &confirmed) != nil || len(confirmed) > maxConfirmation) {
		a := dashatool.Invalid(callerConfirmedArg, fmt.Sprintf("caller_confirmed must be a string of at most %d characters: the time or amount the caller confirmed", maxConfirmation))
		return "", nil, &a
	}
	return strings.TrimSpace(confirmed), rest, nil
}

// readBack is what the caller must confirm before a gated request runs.
type readBack struct {
	// Sentence is read to the caller as it is.
	Sentence string
	// Echo is the value caller_confirmed must carry (a local time
	// YYYY-MM-DDTHH:MM, or an amount such as 45.00 USD).
	Echo string
	// Said is the time or amount as it is said, which caller_confirmed may
	// also carry.
	Said string
	// matches reports whether caller_confirmed names this time or amount.
	matches func(given string) bool
	details map[string]any
}

// confirmGate answers a gated request: ok when the tenant's gate is off,
// when the request is not new (its key has an action that did or may have
// happened: it is answered for that), or when caller_confirmed names what
// the request would do; else the needs_caller_confirmation refusal. A
// request whose target cannot be read (no such slot, appointment or
// intent) passes: the operation refuses it. The gate's setting is read
// first, so a tenant without the gate pays one read.
func (s *Server) confirmGate(ctx context.Context, tenant oncecall.Tenant, prep *op.Prepared, key, confirmed string) (dashatool.Answer, bool, error) {
	on, err := s.cfg.Store.CallerConfirmation(ctx, tenant.ID)
	if err != nil || !on {
		return dashatool.Answer{}, true, db.Fault(err)
	}
	a, err := s.cfg.Store.ActionByKey(ctx, tenant.ID, key)
	switch {
	case err == nil && (a.State != oncecall.Completed || a.Outcome != oncecall.Rejected):
		return dashatool.Answer{}, true, nil
	case err != nil && !errors.Is(err, db.ErrNotFound):
		return dashatool.Answer{}, true, db.Fault(err)
	}
	rb, found, err := s.readBack(ctx, tenant, prep)
	if err != nil || !found {
		return dashatool.Answer{}, true, err
	}
	if confirmed != "" && rb.matches(confirmed) {
		return dashatool.Answer{}, true, nil
	}
	details := rb.details
	details["code"] = "NEEDS_CALLER_CONFIRMATION"
	details["read_back"] = rb.Sentence
	details[callerConfirmedArg] = rb.Echo
	say := fmt.Sprintf("Nothing was done yet: this needs the caller's explicit confirmation first. Read this back to the caller, "+
		"exactly: %q If they clearly say yes to it, call this tool again with the same arguments and caller_confirmed set to %q. "+
		"If they want something else, do not call it with this confirmation.", rb.Sentence, rb.Echo)
	if confirmed != "" {
		details["given"] = confirmed
		say = fmt.Sprintf("Nothing was done: caller_confirmed %q is not what this request would do (%s), so it is not the caller's "+
			"confirmation of it. ", confirmed, rb.Said) + say
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return dashatool.Answer{}, false, err
	}
	return dashatool.Answer{Outcome: string(oncecall.Rejected), Reason: needsCallerConfirmation, Say: say, Details: raw}, false, nil
}

// readBack reads what a gated request would do: the slot it books or moves
// to, the appointment it cancels, the amount it charges.
func (s *Server) readBack(ctx context.Context, tenant oncecall.Tenant, prep *op.Prepared) (readBack, bool, error) {
	var in struct {
		SlotID          string          `json:"slot_id"`
		StartsAt        string          `json:"starts_at"`
		LocationID      string          `json:"location_id"`
		PractitionerID  string          `json:"practitioner_id"`
		AppointmentID   string          `json:"appointment_id"`
		PaymentIntentID string          `json:"payment_intent_id"`
		Amount          json.RawMessage `json:"amount"`
	}
	if err := json.Unmarshal(prep.Input, &in); err != nil {
		return readBack{}, false, err
	}
	clock, err := s.tenantClock(ctx, tenant.ID)
	if err != nil {
		return readBack{}, false, err
	}
	switch prep.Operation {
	case chargeOperation:
		return s.amountReadBack(ctx, tenant, in.PaymentIntentID, in.Amount)
	case cancelOperation:
		id, err := uuid.Parse(in.AppointmentID)
		if err != nil {
			return readBack{}, false, nil //nolint:nilerr // the operation refuses it
		}
		appt, err := s.cfg.Store.AppointmentByID(ctx, tenant.ID, id)
		if errors.Is(err, db.ErrNotFound) {
			return readBack{}, false, nil
		}
		if err != nil {
			return readBack{}, false, db.Fault(err)
		}
		return s.slotReadBack(ctx, tenant, clock, appt.SlotID, "Cancel your appointment on %s — shall I cancel it?")
	case rescheduleOperation:
		slot, err := uuid.Parse(in.SlotID)
		if err != nil {
			return readBack{}, false, nil //nolint:nilerr // the operation refuses it
		}
		return s.slotReadBack(ctx, tenant, clock, slot, "Move your appointment to %s — shall I move it?")
	}
	if slot, err := uuid.Parse(in.SlotID); err == nil {
		return s.slotReadBack(ctx, tenant, clock, slot, "%s — shall I book it?")
	}
	// A booking by service: the time asked for, where it takes place, and
	// the practitioner when one is asked for.
	start, err := time.Parse(time.RFC3339Nano, in.StartsAt)
	if err != nil {
		return readBack{}, false, nil //nolint:nilerr // the operation refuses it
	}
	place := oncecall.OpenSlot{Slot: oncecall.Slot{StartsAt: start}}
	if id, err := uuid.Parse(in.PractitionerID); err == nil {
		p, err := s.cfg.Store.PractitionerByID(ctx, tenant.ID, id)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return readBack{}, false, db.Fault(err)
		}
		place.Practitioner = p.Name
	}
	if id, err := uuid.Parse(in.LocationID); err == nil {
		if l, err := s.cfg.Store.LocationByID(ctx, tenant.ID, id); err == nil {
			place.Timezone = l.Timezone
		} else if !errors.Is(err, db.ErrNotFound) {
			return readBack{}, false, db.Fault(err)
		}
	}
	return timeReadBack(clock.In(place.Timezone), place, "%s — shall I book it?"), true, nil
}

// slotReadBack reads back a slot's time in its location's zone, with its
// practitioner.
func (s *Server) slotReadBack(ctx context.Context, tenant oncecall.Tenant, clock schedule.Clock, slot uuid.UUID, sentence string) (readBack, bool, error) {
	place, err := s.cfg.Store.SlotPlace(ctx, tenant.ID, slot)
	if errors.Is(err, db.ErrNotFound) {
		return readBack{}, false, nil
	}
	if err != nil {
		return readBack{}, false, db.Fault(err)
	}
	return timeReadBack(clock.In(place.Timezone), place, sentence), true, nil
}

// localEcho is the layout of the local time caller_confirmed carries.
const localEcho = "2006-01-02T15:04"

func timeReadBack(clock schedule.Clock, place oncecall.OpenSlot, sentence string) readBack {
	start := place.StartsAt
	when := clock.Spoken(start, time.Now())
	what := when
	if place.Practitioner != "" {
		what += " with " + place.Practitioner
	}
	details := map[string]any{"when": when, "starts_at": start.UTC(), "timezone": clock.Zone,
		"starts_at_local": start.In(clock.Loc).Format(time.RFC3339)}
	if place.Practitioner != "" {
		details["practitioner"] = place.Practitioner
	}
	if place.ID != uuid.Nil {
		details["slot_id"] = place.ID
	}
	return readBack{
		Sentence: fmt.Sprintf(sentence, what),
		Echo:     start.In(clock.Loc).Format(localEcho),
		Said:     when,
		details:  details,
		matches: func(given string) bool {
			if sameText(given, when) || sameText(given, what) {
				return true
			}
			if t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(given)); err == nil {
				return t.Equal(start)
			}
			for _, layout := range []string{localEcho, "2006-01-02T15:04:05", "2006-01-02 15:04"} {
				if t, err := time.ParseInLocation(layout, given, clock.Loc); err == nil {
					return t.Equal(start)
				}
			}
			return false
		},
	}
}

// amountReadBack reads back the amount a charge takes: the amount asked
// for, else the intent's.
func (s *Server) amountReadBack(ctx context.Context, tenant oncecall.Tenant, intent string, amount json.RawMessage) (readBack, bool, error) {
	id, err := uuid.Parse(intent)
	if err != nil {
		return readBack{}, false, nil //nolint:nilerr // the operation refuses it
	}
	pi, err := s.cfg.Store.PaymentIntentByID(ctx, tenant.ID, id)
	if errors.Is(err, db.ErrNotFound) {
		return readBack{}, false, nil
	}
	if err != nil {
		return readBack{}, false, db.Fault(err)
	}
	minor := pi.Amount
	var n json.Number
	if len(amount) > 0 && json.Unmarshal(amount, &n) == nil {
		if v, err := n.Int64(); err == nil && v > 0 {
			minor = v
		}
	}
	said := op.SpokenAmount(minor, pi.Currency)
	echo := op.DecimalAmount(minor, pi.Currency) + " " + pi.Currency
	return readBack{
		Sentence: fmt.Sprintf("I'll charge %s to your card — shall I go ahead?", said),
		Echo:     echo,
		Said:     said,
		details:  map[string]any{"amount": minor, "currency": pi.Currency, "amount_spoken": said, "payment_intent_id": pi.ID},
		matches: func(given string) bool {
			if sameText(given, said) || sameText(given, echo) {
				return true
			}
			g := strings.TrimSpace(strings.TrimPrefix(strings.TrimSuffix(strings.ToUpper(given), pi.Currency), pi.Currency))
			g = strings.TrimLeft(g, "$£€¥ ")
			r, ok := new(big.Rat).SetString(strings.ReplaceAll(g, ",", ""))
			return ok && r.Cmp(new(big.Rat).SetFrac64(minor, op.MinorUnit(pi.Currency))) == 0
		},
	}, true, nil
}

// sameText compares two texts as said: case, spacing and punctuation aside.
func sameText(a, b string) bool {
	norm := func(s string) string {
		return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}), " ")
	}
	return norm(a) != "" && norm(a) == norm(b)
}
