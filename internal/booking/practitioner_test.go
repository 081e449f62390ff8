package booking_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/op"
)

// TestSingleCalendarInputsKeepTheirFingerprint: the practitioner fields
// are left out of the canonical input when absent, so a request of the
// single calendar made before they existed is the same input after: its
// retry under the same key replays, it is not IDEMPOTENCY_KEY_REUSED.
func TestSingleCalendarInputsKeepTheirFingerprint(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		op        op.Operation
		raw, want string
	}{{
		op:   booking.CreateSlot,
		raw:  `{"starts_at":"2030-01-02T09:00:00Z","ends_at":"2030-01-02T10:00:00Z","resource":"Dr. Lee"}`,
		want: `{"ends_at":"2030-01-02T10:00:00Z","resource":"Dr. Lee","starts_at":"2030-01-02T09:00:00Z"}`,
	}, {
		op:   booking.ScheduleSlots,
		raw:  `{"hours":[{"weekday":"mon","start":"09:00","end":"10:00"}],"slot_minutes":60,"from":"2030-01-07","to":"2030-01-07"}`,
		want: `{"from":"2030-01-07","hours":[{"end":"10:00","start":"09:00","weekday":"mon"}],"resource":"","slot_minutes":60,"timezone":"","to":"2030-01-07"}`,
	}} {
		p, err := c.op.Prepare([]byte(c.raw), nil)
		if err != nil {
			t.Fatalf("%s: %s: %v", c.op.Name(), c.raw, err)
		}
		if string(p.Input) != c.want {
			t.Errorf("%s: %s\n got %s\nwant %s", c.op.Name(), c.raw, p.Input, c.want)
		}
	}
}
