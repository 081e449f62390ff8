package calendar

import (
	"context"
	"errors"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
)

// Steps adapts a Calendar to provider.Provider: the step driver sends a
// calendar step through Write and, when its answer was lost, asks
// LookupWrite (provider.WriteLookup) before it sends anything again.
//
// Every calendar adapter declares keys as not honoured (Traits.HonoursKeys
// false): the provider's own mechanism (Google's event id, Graph's
// transactionId, Cal.com's refusal of a taken slot) guards a re-send, but
// none of them promises to return the first write for every re-send, so
// recovery looks the write up first and sends again only once the lookup,
// past the provider's visibility delay, says there is none.
type Steps struct {
	Calendar Calendar
}

var (
	_ provider.Provider    = Steps{}
	_ provider.WriteLookup = Steps{}
)

// Traits are the calendar's.
func (s Steps) Traits() provider.Traits { return s.Calendar.Traits() }

// Write makes the step's write.
func (s Steps) Write(ctx context.Context, w provider.Write) (provider.Record, error) {
	op, cw, err := parse(w)
	if err != nil {
		return provider.Record{}, err
	}
	var ev Event
	switch op {
	case OpCreate:
		ev, err = s.Calendar.Create(ctx, cw)
	case OpMove:
		ev, err = s.Calendar.Move(ctx, cw)
	case OpCancel:
		ev, err = s.Calendar.Cancel(ctx, cw)
	}
	if err != nil {
		return provider.Record{}, err
	}
	rec := record(op, w.ExternalRef, ev, cw.Payload)
	if rec.Status == "rejected" {
		return provider.Record{}, &provider.Rejected{Code: rec.Code, Message: "event " + ev.ID + " is cancelled in the calendar"}
	}
	return rec, nil
}

// LookupWrite finds what the step's write did (Calendar.Written).
func (s Steps) LookupWrite(ctx context.Context, w provider.Write) (provider.Record, bool, error) {
	op, cw, err := parse(w)
	if err != nil {
		return provider.Record{}, false, err
	}
	ev, found, err := s.Calendar.Written(ctx, op, cw)
	if err != nil || !found {
		return provider.Record{}, false, err
	}
	return record(op, w.ExternalRef, ev, cw.Payload), true, nil
}

// LookupByKey is not how calendar writes are found: the driver asks
// LookupWrite, which knows the calendar the write went to.
func (s Steps) LookupByKey(context.Context, string, string) (provider.Record, bool, error) {
	return provider.Record{}, false, errNeedsWrite
}

// LookupByRef: see LookupByKey.
func (s Steps) LookupByRef(context.Context, string, string) ([]provider.Record, error) {
	return nil, errNeedsWrite
}

var errNeedsWrite = errors.New("a calendar write is looked up with the whole write (LookupWrite)")

func parse(w provider.Write) (Op, Write, error) {
	op, ok := OpOf(w.Operation)
	if !ok {
		return "", Write{}, &provider.Rejected{Code: UnsupportedOperation, Message: "a calendar performs appointment.book, appointment.reschedule and appointment.cancel only"}
	}
	p, err := ParsePayload(w.Payload, op)
	if err != nil {
		return "", Write{}, &provider.Rejected{Code: InvalidPayload, Message: err.Error()}
	}
	if p.StepKey != "" && p.StepKey != w.Key {
		return "", Write{}, &provider.Rejected{Code: InvalidPayload, Message: "step_key is not the key the step is sent with"}
	}
	return op, Write{Key: w.Key, Ref: w.ExternalRef, Payload: p}, nil
}

// record is a step's outcome from the event it made or changed: a create
// or a move whose event is cancelled in the calendar now did not leave a
// booking (EVENT_CANCELLED); a cancel's event is cancelled by definition.
// It also names the slot and service the step was for (a booking by
// service learns there which slot it took).
func record(op Op, ref string, ev Event, p Payload) provider.Record {
	rec := provider.Record{ID: ev.ID, ExternalRef: ref, Status: "committed", Data: Data(ev)}
	if p.SlotID != "" {
		rec.Data["slot_id"] = p.SlotID
	}
	if p.Service.Name != "" {
		rec.Data["service"] = p.Service.Name
	}
	if op != OpCancel && ev.Status == Cancelled {
		rec.Status, rec.Code = "rejected", EventCancelled
	}
	return rec
}

// Data is what a step records of its event, for later steps and for the
// wiring: the event's id and calendar, its time, its version and the event
// it replaced.
func Data(ev Event) map[string]string {
	d := map[string]string{"event_id": ev.ID, "calendar_id": ev.CalendarID, "status": ev.Status}
	if !ev.Start.IsZero() {
		d["start"], d["end"] = ev.Start.UTC().Format(time.RFC3339), ev.End.UTC().Format(time.RFC3339)
	}
	if ev.ETag != "" {
		d["etag"] = ev.ETag
	}
	if ev.Replaces != "" {
		d["replaces"] = ev.Replaces
	}
	return d
}
