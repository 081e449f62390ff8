package booking

import (
	"encoding/json"
	"testing"

	"github.com/oncecall/oncecall/internal/provider"
)

// A move or a cancel in a remote calendar answers with the service the
// appointment was booked for (what the step sent), not an empty one.
func TestCalendarChangeAnswersNameTheService(t *testing.T) {
	t.Parallel()
	rec := provider.Record{ID: "ev1", Data: map[string]string{"event_id": "ev1", "service": "Cleaning", "slot_id": "s2",
		"start": "2030-01-03T09:00:00Z", "end": "2030-01-03T09:30:00Z"}}
	moved, err := calendarMoveRemote{}.Confirmed(RescheduleInput{AppointmentID: "a1", SlotID: "s2"}, rec)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := calendarCancelRemote{}.Confirmed(CancelInput{AppointmentID: "a1"}, rec)
	if err != nil {
		t.Fatal(err)
	}
	for what, body := range map[string][]byte{"move": moved.Body, "cancel": cancelled.Body} {
		var v CalendarAppointment
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		if v.Service != "Cleaning" {
			t.Errorf("the %s's answer carries service %q, want Cleaning: %s", what, v.Service, body)
		}
	}
}
