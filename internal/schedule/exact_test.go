package schedule_test

import (
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/schedule"
)

// A wall-clock time that shows twice the night the clocks go back is said
// with the zone's abbreviation and which showing it is; any other time as
// Spoken says it, with the abbreviation when asked.
func TestSpokenExactly(t *testing.T) {
	t.Parallel()
	us, ok := schedule.NewClock("America/New_York", "en-US")
	gb, ok2 := schedule.NewClock("Europe/London", "en-GB")
	if !ok || !ok2 {
		t.Fatal("the test's zones or locales are not known")
	}
	now := time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return time.Date(2031, 11, 2, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		clock schedule.Clock
		t     time.Time
		zoned bool
		want  string
	}{
		{us, at(5, 30), false, "Sunday, November 2 at 1:30 AM EDT, the first 1:30 AM that night"},
		{us, at(6, 30), false, "Sunday, November 2 at 1:30 AM EST, the second 1:30 AM that night"},
		{us, at(6, 0), false, "Sunday, November 2 at 1:00 AM EST, the second 1:00 AM that night"},
		{us, at(4, 30), false, "Sunday, November 2 at 12:30 AM"},
		{us, at(7, 0), false, "Sunday, November 2 at 2:00 AM"},
		{us, at(19, 30), true, "Sunday, November 2 at 2:30 PM EST"},
		// London goes back on 26 October 2031: 01:30 BST, then 01:30 GMT.
		{gb, time.Date(2031, 10, 26, 0, 30, 0, 0, time.UTC), false, "Sunday 26 October at 01:30 BST, the first 01:30 that night"},
		{gb, time.Date(2031, 10, 26, 1, 30, 0, 0, time.UTC), false, "Sunday 26 October at 01:30 GMT, the second 01:30 that night"},
	} {
		if got := tc.clock.SpokenExactly(tc.t, now, tc.zoned); got != tc.want {
			t.Errorf("%s in %s: %q, want %q", tc.t.Format(time.RFC3339), tc.clock.Zone, got, tc.want)
		}
	}
}
