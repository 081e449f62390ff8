package providersim

import (
	"encoding/json"
	"time"
)

// The calendar of the provider protocol, version 2 (docs/provider-protocol.md):
// a booking's payload names its calendar (practitioner.calendar_id) and its
// time (start.utc, end.utc), so the simulator keeps each calendar's events
// and refuses what a real calendar would: a booking over another live one
// (SLOT_UNAVAILABLE), a move or cancel of an event it does not hold
// (EVENT_NOT_FOUND), a move of a cancelled one (EVENT_CANCELLED), a move
// over another event. A version 1 payload (slot_id) keeps its rule: a slot
// holds one booking.

// calendarPayload is what the simulator reads of a version 2 payload.
type calendarPayload struct {
	Version int `json:"version"`
	Start   struct {
		UTC time.Time `json:"utc"`
	} `json:"start"`
	End struct {
		UTC time.Time `json:"utc"`
	} `json:"end"`
	Practitioner struct {
		CalendarID string `json:"calendar_id"`
	} `json:"practitioner"`
	Event *struct {
		ID string `json:"id"`
	} `json:"event"`
}

func calendarV2(w *Write) (calendarPayload, bool) {
	if w.Capability != Calendar {
		return calendarPayload{}, false
	}
	var p calendarPayload
	if json.Unmarshal(w.Payload, &p) != nil || p.Version != 2 || p.Practitioner.CalendarID == "" {
		return calendarPayload{}, false
	}
	return p, true
}

// calEvent is a booking the calendar holds, by the id of the write that
// made it.
type calEvent struct {
	id, calendar string
	start, end   time.Time
	live         bool
}

// applyCalendar keeps the events of a stored calendar write.
func (st *state) applyCalendar(w *Write) {
	p, ok := calendarV2(w)
	if !ok || w.Status == StatusRejected {
		return
	}
	switch w.Operation {
	case "appointment.book":
		st.events[w.ID] = &calEvent{id: w.ID, calendar: p.Practitioner.CalendarID, start: p.Start.UTC, end: p.End.UTC, live: true}
	case "appointment.reschedule":
		if e := st.eventOf(p); e != nil {
			e.start, e.end = p.Start.UTC, p.End.UTC
		}
	case "appointment.cancel":
		if e := st.eventOf(p); e != nil {
			e.live = false
		}
	}
}

func (st *state) eventOf(p calendarPayload) *calEvent {
	if p.Event == nil {
		return nil
	}
	return st.events[p.Event.ID]
}

// calendarRejection is the refusal a version 2 calendar write meets, if any.
func (st *state) calendarRejection(req writeRequest) (code, message string) {
	p, ok := calendarV2(&Write{Capability: req.capability, Payload: req.payload})
	if !ok {
		return "", ""
	}
	var moving *calEvent
	switch req.operation {
	case "appointment.reschedule", "appointment.cancel":
		moving = st.eventOf(p)
		switch {
		case moving == nil || moving.calendar != p.Practitioner.CalendarID:
			return "EVENT_NOT_FOUND", "the calendar holds no such event"
		case req.operation == "appointment.cancel":
			return "", "" // cancelling a cancelled event leaves it cancelled
		case !moving.live:
			return "EVENT_CANCELLED", "the event is cancelled"
		}
	case "appointment.book":
	default:
		return "", ""
	}
	for _, e := range st.events {
		if e.live && e != moving && e.calendar == p.Practitioner.CalendarID && e.start.Before(p.End.UTC) && p.Start.UTC.Before(e.end) {
			return "SLOT_UNAVAILABLE", "the calendar holds another booking at that time"
		}
	}
	return "", ""
}

// calendarData is what a version 2 calendar write gives back: the event it
// made or changed (a move or a cancel names the booking's event, not
// itself) and its time.
func (st *state) calendarData(w *Write) map[string]string {
	p, ok := calendarV2(w)
	if !ok || w.Status == StatusRejected {
		return nil
	}
	id := w.ID
	if e := st.eventOf(p); e != nil && w.Operation != "appointment.book" {
		id = e.id
	}
	d := map[string]string{"event_id": id, "calendar_id": p.Practitioner.CalendarID, "status": "confirmed"}
	if w.Operation == "appointment.cancel" {
		d["status"] = "cancelled"
	}
	if !p.Start.UTC.IsZero() {
		d["start"], d["end"] = p.Start.UTC.UTC().Format(time.RFC3339), p.End.UTC.UTC().Format(time.RFC3339)
	}
	return d
}
