package callback

import (
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/schedule"
)

func TestLocalTimeIsOneSpelling(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"2030-07-05T14:00": "2030-07-05T14:00", " 2030-07-05 14:00 ": "2030-07-05T14:00",
		"2030-07-05t14:00:00": "2030-07-05T14:00",
	} {
		v := in
		if err := localTime("window_start", &v); err != nil || v != want {
			t.Errorf("%q: %q, %v; want %q", in, v, err, want)
		}
	}
	for _, in := range []string{"", "2030-02-30T10:00", "2030-07-05T14:00:00+01:00", "2030-07-05T14:00Z", "2030-07-05T24:00", "2030-07-05T14:00:30", "5 July 14:00"} {
		v := in
		if err := localTime("window_start", &v); err == nil {
			t.Errorf("%q was accepted as %q", in, v)
		}
	}
}

// A window's wall times are read like a schedule's: across the night the
// clocks go forward a skipped time keeps the offset before the change.
func TestInstantFollowsTheZonesClock(t *testing.T) {
	t.Parallel()
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	for wall, want := range map[string]string{
		"2030-07-05T14:00": "2030-07-05T13:00:00Z", // BST
		"2030-01-07T14:00": "2030-01-07T14:00:00Z", // GMT
		"2030-03-31T01:30": "2030-03-31T01:30:00Z", // skipped: read as GMT
		"2030-10-27T01:30": "2030-10-27T00:30:00Z", // shown twice: the first
	} {
		if got := instant(wall, london).UTC().Format(time.RFC3339); got != want {
			t.Errorf("%s in London = %s, want %s", wall, got, want)
		}
	}
}

func TestSpokenWindow(t *testing.T) {
	t.Parallel()
	ny, _ := schedule.NewClock("America/New_York", "en-GB")
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	start := time.Date(2030, 7, 5, 18, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		end  time.Time
		want string
	}{
		{start.Add(150 * time.Minute), "Friday 5 July between 14:00 and 16:30"},
		{start.Add(20 * time.Hour), "from Friday 5 July at 14:00 to Saturday 6 July at 10:00"},
	} {
		if got := ny.Window(start, c.end, now); got != c.want {
			t.Errorf("Window = %q, want %q", got, c.want)
		}
	}
	if got := ny.Window(start, start.Add(time.Hour), now.AddDate(-1, 0, 0)); got != "Friday 5 July 2030 between 14:00 and 15:00" {
		t.Errorf("another year: %q", got)
	}
}
