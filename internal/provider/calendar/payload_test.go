package calendar_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/provider/calendar/calendartest"
)

func TestParsePayload(t *testing.T) {
	t.Parallel()
	st := calendartest.NewStep("calendar")
	start := time.Date(2030, 3, 30, 9, 0, 0, 0, time.UTC)
	good := st.Payload("cal-1", start, 30)
	for _, c := range []struct {
		name string
		op   calendar.Op
		edit func(*calendar.Payload)
		want string // "" for valid
	}{
		{"valid create", calendar.OpCreate, func(*calendar.Payload) {}, ""},
		{"version 1", calendar.OpCreate, func(p *calendar.Payload) { p.Version = 1 }, "version 2 is required"},
		{"no tenant", calendar.OpCreate, func(p *calendar.Payload) { p.TenantID = "" }, "tenant_id"},
		{"no calendar", calendar.OpCreate, func(p *calendar.Payload) { p.Practitioner.CalendarID = "" }, "calendar_id"},
		{"no customer", calendar.OpCreate, func(p *calendar.Payload) { p.Customer.ID = "" }, "customer.id"},
		{"wall clock not the instant", calendar.OpCreate, func(p *calendar.Payload) { p.Start.Local = "2030-03-30T09:00:00" }, "start.local"},
		{"unknown zone", calendar.OpCreate, func(p *calendar.Payload) { p.End.Zone = "Mars/Olympus" }, "end.zone"},
		{"end before start", calendar.OpCreate, func(p *calendar.Payload) { p.End = calendar.At(start.Add(-time.Hour), calendartest.Zone) }, "end must be after start"},
		{"move without event", calendar.OpMove, func(*calendar.Payload) {}, "event.id"},
		{"cancel without time", calendar.OpCancel, func(p *calendar.Payload) {
			p.Start, p.End, p.Event = calendar.When{}, calendar.When{}, &calendar.EventRef{ID: "e1"}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := good
			c.edit(&p)
			raw, _ := json.Marshal(p)
			_, err := calendar.ParsePayload(raw, c.op)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("ParsePayload: %v, want %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "Lucía") {
				t.Errorf("the error repeats customer data: %v", err)
			}
		})
	}
	if _, err := calendar.ParsePayload([]byte(`{"version":2,"slot_id":"s"}`), calendar.OpCreate); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// The local wall clock carries the zone's offset: 09:00 UTC on the day
// Madrid moves to summer time is 11:00 there.
func TestAtIsTheLocationsWallClock(t *testing.T) {
	t.Parallel()
	w := calendar.At(time.Date(2030, 3, 31, 9, 0, 0, 0, time.UTC), calendartest.Zone)
	if w.Local != "2030-03-31T11:00:00" || w.Zone != "Europe/Madrid" {
		t.Errorf("At = %+v", w)
	}
}

func TestStepsRejectWhatIsNotACalendarWrite(t *testing.T) {
	t.Parallel()
	st := calendartest.NewStep("calendar")
	s := calendar.Steps{}
	w := st.Write(t, "payment.charge", st.Payload("cal-1", time.Now().Add(time.Hour), 30))
	if _, err := s.Write(t.Context(), w); !rejected(err, calendar.UnsupportedOperation) {
		t.Errorf("a charge: %v", err)
	}
	other := st.Payload("cal-1", time.Now().Add(time.Hour), 30)
	other.StepKey = "oc-another"
	if _, err := s.Write(t.Context(), st.Write(t, calendar.Book, other)); !rejected(err, calendar.InvalidPayload) {
		t.Errorf("a payload for another key: %v", err)
	}
}

func rejected(err error, code string) bool {
	rej, ok := errors.AsType[*provider.Rejected](err)
	return ok && rej.Code == code
}

func TestAvailabilityFree(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	span := func(from, to int) calendar.Span {
		return calendar.Span{Start: at.Add(time.Duration(from) * time.Minute), End: at.Add(time.Duration(to) * time.Minute)}
	}
	busy := calendar.Availability{Busy: []calendar.Span{span(0, 60)}}
	slots := calendar.Availability{Slots: true, Open: []calendar.Span{span(60, 90)}}
	for _, c := range []struct {
		a    calendar.Availability
		s    calendar.Span
		free bool
	}{
		{busy, span(60, 90), true}, {busy, span(59, 90), false}, {busy, span(-30, 0), true},
		{slots, span(60, 90), true}, {slots, span(60, 91), false}, {slots, span(0, 30), false},
	} {
		if got := c.a.Free(c.s); got != c.free {
			t.Errorf("%+v Free(%v) = %v", c.a, c.s, got)
		}
	}
}

func TestMovesKeepTheLatest(t *testing.T) {
	t.Parallel()
	var m calendar.Marks
	for i := range calendar.MaxMoves + 3 {
		m.Moves = m.Moved(string(rune('a' + i)))
	}
	if len(m.Moves) != calendar.MaxMoves || m.Moves[len(m.Moves)-1] != string(rune('a'+calendar.MaxMoves+2)) {
		t.Errorf("moves %v", m.Moves)
	}
	if again := m.Moved(m.Moves[0]); len(again) != calendar.MaxMoves || again[0] != m.Moves[0] {
		t.Errorf("a known move was added again: %v", again)
	}
}
