package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
)

// Operations whose answers speakable completes from the tenant's records.
const (
	chargeOperation     = "payment.charge"
	pointsOperation     = "customer.points.add"
	bookOperation       = "appointment.book"
	rescheduleOperation = "appointment.reschedule"
)

// speakable adds to the details of a completed action's answer what a voice
// agent says aloud and the stored answer lacks: a confirmed booking's slot
// and times, whatever calendar made it (bookedSlot); a time on the tenant's
// clock in the slot's location's timezone, else the tenant's (when, as
// list_appointments gives it), with who and where; an amount as it is said
// (amount_spoken, and the amount and currency of a charge a remote provider
// made), and, for a points change heard again (replayed), the balance read
// now (balance_now; the stored balance is dropped when it is no longer
// true). A pruned answer of an effect a provider performed is said as such
// (performedPruned). The stored answer is never changed; a first answer and
// its exact retry still say the same.
func (s *Server) speakable(ctx context.Context, tenant oncecall.Tenant, a oncecall.Action, replayed bool, ans dashatool.Answer) (dashatool.Answer, error) {
	if a.State != oncecall.Completed {
		return ans, nil
	}
	if a.Outcome == oncecall.Confirmed && a.Result == nil {
		var err error
		if ans, err = s.performedPruned(ctx, a, ans); err != nil {
			return ans, err
		}
	}
	var d map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(ans.Details))
	dec.UseNumber()
	if dec.Decode(&d) != nil || d == nil {
		return ans, nil
	}
	added := false
	set := func(k string, v any) {
		if raw, err := json.Marshal(v); err == nil {
			d[k], added = raw, true
		}
	}
	if a.Outcome == oncecall.Confirmed && (a.Operation == bookOperation || a.Operation == rescheduleOperation) {
		if err := s.bookedSlot(ctx, tenant, a, d, set); err != nil {
			return ans, err
		}
	}
	if start, ok := timeField(d, "starts_at"); ok {
		if _, has := d["when"]; !has {
			clock, place, err := s.answerClock(ctx, tenant, d)
			if err != nil {
				return ans, err
			}
			if place.Catalog() {
				set("practitioner_id", place.PractitionerID)
				set("practitioner", place.Practitioner)
				set("location_id", place.LocationID)
				set("location", place.Location)
			}
			end, _ := timeField(d, "ends_at")
			l := clock.Localize(start, end, time.Now())
			set("timezone", clock.Zone)
			set("when", l.When)
			set("starts_at_local", l.StartsAtLocal)
			if !end.IsZero() {
				set("ends_at_local", l.EndsAtLocal)
			}
		}
	}
	if a.Operation == chargeOperation && a.Outcome == oncecall.Confirmed {
		if err := s.chargedAmount(ctx, tenant, d, set); err != nil {
			return ans, err
		}
	}
	if currency, ok := stringField(d, "currency"); ok {
		for _, k := range []string{"amount", "intent_amount"} {
			if n, ok := intField(d, k); ok {
				set(k+"_spoken", op.SpokenAmount(n, currency))
			}
		}
	}
	if a.Operation == pointsOperation && a.Outcome == oncecall.Confirmed {
		if err := s.balanceNow(ctx, tenant, d, replayed, set); err != nil {
			return ans, err
		}
	}
	if alts, ok := d["alternatives"]; ok && a.Outcome == oncecall.Rejected {
		// A booking by service that found no practitioner free: the next
		// free times are said too.
		if said := dashatool.AlternativesSaid(alts); said != "" {
			ans.Say += " " + said
		}
	}
	if !added {
		return ans, nil
	}
	out, err := json.Marshal(d)
	if err != nil {
		return ans, err
	}
	ans.Details = out
	return ans, nil
}

// performedPruned says of a confirmed action whose answer was pruned what
// its operation says of an effect a provider performed (op.Phrases.
// Performed) when its required step was a provider's and succeeded: the
// answer no longer names the provider's record, its steps still do.
func (s *Server) performedPruned(ctx context.Context, a oncecall.Action, ans dashatool.Answer) (dashatool.Answer, error) {
	o, ok := s.cfg.Ops.Get(a.Operation)
	if !ok || o.Phrases().Performed == "" {
		return ans, nil
	}
	steps, err := s.cfg.Store.Steps(ctx, a.ID)
	if err != nil {
		return ans, db.Fault(err)
	}
	for _, st := range steps {
		if st.Required && st.State == oncecall.StepSucceeded {
			ans.Say = o.Phrases().Performed
		}
	}
	return ans, nil
}

// answerClock is the clock an answer's time is said on: the tenant's, in
// the location's timezone when the answer names a slot of a practitioner
// (place, then, says whose and where), else in the tenant's.
func (s *Server) answerClock(ctx context.Context, tenant oncecall.Tenant, d map[string]json.RawMessage) (schedule.Clock, oncecall.OpenSlot, error) {
	clock, err := s.tenantClock(ctx, tenant.ID)
	if err != nil {
		return clock, oncecall.OpenSlot{}, err
	}
	if id, ok := stringField(d, "slot_id"); ok {
		if slot, err := uuid.Parse(id); err == nil {
			place, err := s.cfg.Store.SlotPlace(ctx, tenant.ID, slot)
			switch {
			case err == nil:
				return clock.In(place.Timezone), place, nil
			case !errors.Is(err, db.ErrNotFound):
				return clock, oncecall.OpenSlot{}, db.Fault(err)
			}
		}
	}
	return clock, oncecall.OpenSlot{}, nil
}

// bookedSlot adds the booked slot and its times to a confirmed booking's
// answer that holds none: one a remote calendar made, or an operator
// confirmed from its evidence, answers with the provider's reference and
// the request ({id, provider_ref, request}), and a pruned one with its id.
// The slot is the request's (the action's, or the answer's own request),
// else the appointment's when the id is one of ours. For a slot of the
// single calendar, its resource (who or what it is with) is said too; a
// practitioner's slot names them (see answerClock).
func (s *Server) bookedSlot(ctx context.Context, tenant oncecall.Tenant, a oncecall.Action, d map[string]json.RawMessage, set func(string, any)) error {
	if _, ok := d["starts_at"]; ok {
		return nil
	}
	var req struct {
		SlotID string `json:"slot_id"`
	}
	if json.Unmarshal(a.Request, &req) != nil || req.SlotID == "" {
		_ = json.Unmarshal(d["request"], &req)
	}
	slot, err := uuid.Parse(req.SlotID)
	if err != nil {
		id, _ := stringField(d, "id")
		appt, perr := uuid.Parse(id)
		if perr != nil {
			return nil //nolint:nilerr // a provider's reference and no request: no slot to read
		}
		booked, err := s.cfg.Store.AppointmentByID(ctx, tenant.ID, appt)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return db.Fault(err)
		}
		slot = booked.SlotID
	}
	place, err := s.cfg.Store.SlotPlace(ctx, tenant.ID, slot)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return db.Fault(err)
	}
	set("slot_id", slot)
	set("starts_at", place.StartsAt.UTC())
	set("ends_at", place.EndsAt.UTC())
	if !place.Catalog() && place.Resource != "" {
		set("resource", place.Resource)
	}
	return nil
}

// chargedAmount gives the amount and currency of a charge whose answer
// holds only the provider's reference and the request (a remote charge):
// the request's amount, or the intent's whole amount, in its currency.
func (s *Server) chargedAmount(ctx context.Context, tenant oncecall.Tenant, d map[string]json.RawMessage, set func(string, any)) error {
	if _, ok := d["amount"]; ok {
		return nil
	}
	var req struct {
		PaymentIntentID string      `json:"payment_intent_id"`
		Amount          json.Number `json:"amount"`
	}
	if json.Unmarshal(d["request"], &req) != nil {
		return nil
	}
	id, err := uuid.Parse(req.PaymentIntentID)
	if err != nil {
		return nil //nolint:nilerr // not an intent of ours: nothing to add
	}
	pi, err := s.cfg.Store.PaymentIntentByID(ctx, tenant.ID, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return db.Fault(err)
	}
	amount := pi.Amount
	if n, err := req.Amount.Int64(); err == nil && n > 0 {
		amount = n
	}
	set("amount", amount)
	set("currency", pi.Currency)
	return nil
}

// balanceNow adds the customer's balance read now to a points change's
// answer. A replay's stored balance (the balance right after the change)
// is dropped once other changes have moved it: it is no longer true.
func (s *Server) balanceNow(ctx context.Context, tenant oncecall.Tenant, d map[string]json.RawMessage, replayed bool, set func(string, any)) error {
	id, ok := stringField(d, "customer_id")
	cid, err := uuid.Parse(id)
	if !ok || err != nil {
		return nil //nolint:nilerr // a remote CRM's answer: no local balance
	}
	c, err := s.cfg.Store.CustomerByID(ctx, tenant.ID, cid)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return db.Fault(err)
	}
	set("balance_now", c.Points)
	if then, ok := intField(d, "balance"); ok && replayed && then != c.Points {
		delete(d, "balance")
	}
	return nil
}

func timeField(d map[string]json.RawMessage, k string) (time.Time, bool) {
	v, ok := stringField(d, k)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

func stringField(d map[string]json.RawMessage, k string) (string, bool) {
	var v string
	raw, ok := d[k]
	return v, ok && json.Unmarshal(raw, &v) == nil && v != ""
}

func intField(d map[string]json.RawMessage, k string) (int64, bool) {
	var v int64
	raw, ok := d[k]
	return v, ok && json.Unmarshal(raw, &v) == nil
}

// conflicting answers a request whose identity names an action with other
// details. When the request only restates what that action did (see
// op.Restater) it is a replay of it; otherwise the answer says what
// stands.
func (s *Server) conflicting(ctx context.Context, tenant oncecall.Tenant, prep *op.Prepared, existing oncecall.Action) (dashatool.Answer, error) {
	info := infoFrom(ctx)
	var phrases op.Phrases
	if o, ok := s.cfg.Ops.Get(existing.Operation); ok {
		phrases = o.Phrases()
	}
	same, err := prep.Restates(ctx, s.cfg.Store, existing)
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	if same {
		info.actionID, info.replayed = existing.ID.String(), true
		return s.speakable(ctx, tenant, existing, true, dashatool.ForAction(existing, phrases))
	}
	stands, err := s.speakable(ctx, tenant, existing, true, dashatool.ForAction(existing, phrases))
	if err != nil {
		return stands, err
	}
	if stands, err = s.changed(ctx, stands, existing, phrases); err != nil {
		return stands, err
	}
	return dashatool.Conflicting(stands), nil
}
