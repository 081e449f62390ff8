package console

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/schedule"
)

// A booking stuck on a business's own calendar says where to look in
// words that calendar's own search finds: the title and the local time
// oncecall wrote the event with, not oncecall's key.
func TestWhereToLookInTheBusinesssCalendar(t *testing.T) {
	t.Parallel()
	ny, _ := time.LoadLocation("America/New_York")
	start := time.Date(2026, 12, 11, 15, 30, 0, 0, time.UTC)
	p := calendar.Payload{Version: calendar.PayloadVersion, Start: calendar.At(start, ny), End: calendar.At(start.Add(30*time.Minute), ny),
		Service: calendar.Service{Name: "Cleaning"}, Customer: calendar.Contact{Name: "Lucy Park"},
		Practitioner: calendar.Practitioner{Name: "Dr. Patel", CalendarID: "patel@clinic.example"}}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	clock, ok := schedule.NewClock("America/New_York", "en-US")
	if !ok {
		t.Fatal("no clock of New York")
	}
	a := oncecall.Action{Operation: "appointment.book", State: oncecall.Unknown, NeedsOperator: true}
	for kind, name := range map[string]string{"google": "Google Calendar", "microsoft": "Microsoft 365", "calcom": "Cal.com"} {
		st := oncecall.Step{Name: "calendar", Capability: "calendar", ProviderKind: kind, ProviderKey: "oc-0123abcd", Payload: raw, State: oncecall.StepUnknown}
		_, look := unknownWords(a, []oncecall.Step{st}, words{}, clock, start.Add(-48*time.Hour))
		if len(look) != 1 {
			t.Fatalf("%s: %d lines", kind, len(look))
		}
		line := look[0]
		for _, want := range []string{"Search " + name, "“Cleaning — Lucy Park”", "10:30 AM", "America/New_York", "Dr. Patel"} {
			if !strings.Contains(line, want) {
				t.Errorf("%s: %q does not say %q", kind, line, want)
			}
		}
		if strings.Contains(line, "oc-0123abcd") {
			t.Errorf("%s: %q names oncecall's key, which the calendar's search cannot find", kind, line)
		}
	}
}
