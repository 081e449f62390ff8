package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/schedule"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := schedule.ParseZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseZone(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe"} {
		if _, err := schedule.ParseZone(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Local", "Mars/Olympus", " Europe/London", "europe/london", "../../etc/passwd", "Europe/London\x00"} {
		if _, err := schedule.ParseZone(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestAtAcrossClockChanges pins how a wall-clock time becomes an instant on
// the days clocks change: a skipped time is read with the offset before the
// change, a repeated one is its first occurrence (RFC 5545, 3.3.5).
func TestAtAcrossClockChanges(t *testing.T) {
	t.Parallel()
	london, newYork := zone(t, "Europe/London"), zone(t, "America/New_York")
	for _, c := range []struct {
		loc    *time.Location
		day    string
		clock  int
		want   string
		reason string
	}{
		{london, "2030-03-29", 9 * 60, "2030-03-29T09:00:00Z", "GMT before the change"},
		{london, "2030-04-01", 9 * 60, "2030-04-01T08:00:00Z", "BST after it"},
		{london, "2030-03-31", 30, "2030-03-31T00:30:00Z", "before the jump"},
		{london, "2030-03-31", 90, "2030-03-31T01:30:00Z", "01:30 is skipped: read in GMT, it is 02:30 BST"},
		{london, "2030-03-31", 120, "2030-03-31T01:00:00Z", "02:00 BST is the jump"},
		{london, "2030-10-27", 60, "2030-10-27T00:00:00Z", "01:00 shows twice: the first, in BST"},
		{london, "2030-10-27", 90, "2030-10-27T00:30:00Z", "01:30 shows twice: the first, in BST"},
		{london, "2030-10-27", 120, "2030-10-27T02:00:00Z", "02:00 shows once, in GMT"},
		{london, "2030-10-26", 24 * 60, "2030-10-26T23:00:00Z", "24:00 is the next midnight, still BST"},
		{newYork, "2030-03-10", 150, "2030-03-10T07:30:00Z", "02:30 is skipped: read in EST, it is 03:30 EDT"},
		{newYork, "2030-11-03", 90, "2030-11-03T05:30:00Z", "01:30 shows twice: the first, in EDT"},
	} {
		if got := schedule.At(day(c.day), c.clock, c.loc).UTC(); !got.Equal(utc(c.want)) {
			t.Errorf("%s %s minute %d = %s, want %s (%s)", c.loc, c.day, c.clock, got.Format(time.RFC3339), c.want, c.reason)
		}
	}
}

func starts(spans []schedule.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Start.UTC().Format(time.RFC3339)
	}
	return out
}

func checkConsecutive(t *testing.T, spans []schedule.Span, slot time.Duration) {
	t.Helper()
	for i, s := range spans {
		if s.End.Sub(s.Start) != slot {
			t.Errorf("slot %d lasts %s, want %s", i, s.End.Sub(s.Start), slot)
		}
		if i > 0 && s.Start.Before(spans[i-1].End) {
			t.Errorf("slot %d starts at %s, before slot %d ends at %s", i, s.Start, i-1, spans[i-1].End)
		}
	}
}

func TestSlotsInTheWeekTheClocksGoForward(t *testing.T) {
	t.Parallel()
	london := zone(t, "Europe/London")
	var hours []schedule.Hours
	for d := time.Monday; d <= time.Friday; d++ {
		hours = append(hours, schedule.Hours{Weekday: d, Start: 9 * 60, End: 17 * 60})
	}
	// Sunday 31 March 2030: the clocks go from 01:00 GMT to 02:00 BST.
	hours = append(hours, schedule.Hours{Weekday: time.Sunday, Start: 0, End: 4 * 60})
	p := schedule.Plan{Hours: hours, Slot: time.Hour, First: day("2030-03-25"), Last: day("2030-04-01")}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	spans := p.Slots(london)
	checkConsecutive(t, spans, time.Hour)
	// Five weekdays before, one after, 8 slots each; the Sunday night loses its skipped hour.
	if len(spans) != 6*8+3 || p.WallCount() != 6*8+4 {
		t.Fatalf("%d slots (wall count %d), want %d (%d)", len(spans), p.WallCount(), 6*8+3, 6*8+4)
	}
	got := starts(spans)
	for i, want := range map[int]string{
		0:  "2030-03-25T09:00:00Z", // Monday 09:00 GMT
		39: "2030-03-29T16:00:00Z", // Friday 16:00 GMT, the last of the week
		40: "2030-03-31T00:00:00Z", // Sunday 00:00 GMT
		41: "2030-03-31T01:00:00Z", // Sunday 02:00 BST: 01:00 never shows
		42: "2030-03-31T02:00:00Z", // Sunday 03:00 BST
		43: "2030-04-01T08:00:00Z", // Monday 09:00 BST
		50: "2030-04-01T15:00:00Z", // Monday 16:00 BST
	} {
		if got[i] != want {
			t.Errorf("slot %d starts %s, want %s", i, got[i], want)
		}
	}
}

func TestSlotsInTheNightTheClocksGoBack(t *testing.T) {
	t.Parallel()
	london := zone(t, "Europe/London")
	// Sunday 27 October 2030: the clocks go from 02:00 BST back to 01:00 GMT.
	p := schedule.Plan{
		Hours: []schedule.Hours{{Weekday: time.Sunday, Start: 0, End: 4 * 60}},
		Slot:  time.Hour, First: day("2030-10-27"), Last: day("2030-10-27"),
	}
	spans := p.Slots(london)
	checkConsecutive(t, spans, time.Hour)
	want := []string{"2030-10-26T23:00:00Z", "2030-10-27T00:00:00Z", "2030-10-27T01:00:00Z", "2030-10-27T02:00:00Z", "2030-10-27T03:00:00Z"}
	if got := starts(spans); len(got) != len(want) || p.WallCount() != 4 {
		t.Fatalf("slots %v (wall count %d), want %v (4)", got, p.WallCount(), want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("slot %d starts %s, want %s", i, got[i], want[i])
			}
		}
	}
	var clocks []string
	for _, s := range spans {
		clocks = append(clocks, s.Start.In(london).Format("15:04 MST"))
	}
	if got := clocks; got[1] != "01:00 BST" || got[2] != "01:00 GMT" {
		t.Errorf("the repeated hour: %v", got)
	}
}

func TestSlotsLeaveOutARestTooShort(t *testing.T) {
	t.Parallel()
	p := schedule.Plan{
		Hours: []schedule.Hours{{Weekday: time.Monday, Start: 9 * 60, End: 17 * 60}, {Weekday: time.Monday, Start: 18 * 60, End: 24 * 60}},
		Slot:  45 * time.Minute, First: day("2030-01-07"), Last: day("2030-01-13"),
	}
	spans := p.Slots(time.UTC)
	checkConsecutive(t, spans, 45*time.Minute)
	// 8 h holds ten 45-minute slots (the last ends 16:30), 6 h holds eight.
	if len(spans) != 18 || p.WallCount() != 18 {
		t.Fatalf("%d slots, wall count %d, want 18", len(spans), p.WallCount())
	}
	if last := spans[9]; last.End != utc("2030-01-07T16:30:00Z") {
		t.Errorf("the tenth slot ends %s", last.End)
	}
	if last := spans[17]; last.End != utc("2030-01-08T00:00:00Z") {
		t.Errorf("the last slot ends %s, want midnight", last.End)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for name, hours := range map[string][]schedule.Hours{
		"reversed": {{Weekday: time.Monday, Start: 600, End: 540}},
		"empty":    {{Weekday: time.Monday, Start: 600, End: 600}},
		"overlap":  {{Weekday: time.Tuesday, Start: 540, End: 720}, {Weekday: time.Tuesday, Start: 660, End: 780}},
	} {
		if err := (schedule.Plan{Hours: hours, Slot: time.Hour}).Check(); err == nil {
			t.Errorf("%s hours passed", name)
		}
	}
	ok := []schedule.Hours{{Weekday: time.Tuesday, Start: 540, End: 720}, {Weekday: time.Tuesday, Start: 720, End: 780}, {Weekday: time.Wednesday, Start: 600, End: 660}}
	if err := (schedule.Plan{Hours: ok, Slot: time.Hour}).Check(); err != nil {
		t.Errorf("adjacent windows: %v", err)
	}
}

func TestParseClockAndWeekday(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"00:00": 0, "09:30": 570, "23:59": 1439} {
		if got, ok := schedule.ParseClock(s, false); !ok || got != want {
			t.Errorf("%s = %d %v", s, got, ok)
		}
	}
	if got, ok := schedule.ParseClock("24:00", true); !ok || got != 1440 {
		t.Errorf("24:00 as an end = %d %v", got, ok)
	}
	for _, bad := range []string{"24:00", "9:00", "09:60", "24:01", "0900", " 09:00", "09:00:00"} {
		if _, ok := schedule.ParseClock(bad, false); ok {
			t.Errorf("%q was accepted", bad)
		}
	}
	for i, name := range schedule.Weekdays() {
		d, ok := schedule.ParseWeekday(name)
		if !ok || schedule.WeekdayName(d) != name || int(d) != (i+1)%7 {
			t.Errorf("%s = %v %v", name, d, ok)
		}
	}
	if d, ok := schedule.ParseWeekday("SUN"); !ok || d != time.Sunday {
		t.Errorf("SUN = %v %v", d, ok)
	}
	if _, ok := schedule.ParseWeekday("monday"); ok {
		t.Error("monday was accepted")
	}
}

func TestSpokenAndLocal(t *testing.T) {
	t.Parallel()
	london, _ := schedule.NewClock("Europe/London", "en-GB")
	now := utc("2030-06-01T12:00:00Z")
	winter := london.Localize(utc("2030-12-06T14:30:00Z"), utc("2030-12-06T15:00:00Z"), now)
	if winter.When != "Friday 6 December at 14:30" || winter.StartsAtLocal != "2030-12-06T14:30:00Z" || winter.EndsAtLocal != "2030-12-06T15:00:00Z" {
		t.Errorf("winter: %+v", winter)
	}
	summer := london.Localize(utc("2030-07-05T13:30:00Z"), utc("2030-07-05T14:00:00Z"), now)
	if summer.When != "Friday 5 July at 14:30" || summer.StartsAtLocal != "2030-07-05T14:30:00+01:00" || summer.EndsAtLocal != "2030-07-05T15:00:00+01:00" {
		t.Errorf("summer: %+v", summer)
	}
	if got := london.Spoken(utc("2031-01-03T09:00:00Z"), now); got != "Friday 3 January 2031 at 09:00" {
		t.Errorf("next year: %s", got)
	}
	// The year is the caller's: 23:30 on 31 December in New York is already 2031 in UTC.
	if got := london.In("America/New_York").Spoken(utc("2031-01-01T04:30:00Z"), utc("2030-12-31T20:00:00Z")); got != "Tuesday 31 December at 23:30" {
		t.Errorf("new year's eve: %s", got)
	}
}

// TestLocalesSayTimes: each locale's order of day and month and its clock,
// with and without the year, and windows within a day and across days.
func TestLocalesSayTimes(t *testing.T) {
	t.Parallel()
	now := utc("2030-06-01T12:00:00Z")
	morning, evening := utc("2030-12-06T15:30:00Z"), utc("2030-12-07T00:05:00Z") // 09:30 and 18:05 in Chicago
	for _, c := range []struct {
		locale                              string
		spoken, nextYear, window, overnight string
	}{
		{"en-US", "Friday, December 6 at 9:30 AM", "Friday, January 3, 2031 at 12:00 PM",
			"Friday, December 6 between 9:30 AM and 6:05 PM", "from Friday, December 6 at 9:30 AM to Saturday, December 7 at 9:30 AM"},
		{"en-GB", "Friday 6 December at 09:30", "Friday 3 January 2031 at 12:00",
			"Friday 6 December between 09:30 and 18:05", "from Friday 6 December at 09:30 to Saturday 7 December at 09:30"},
	} {
		clock, ok := schedule.NewClock("America/Chicago", c.locale)
		if !ok || string(clock.Locale) != c.locale {
			t.Fatalf("NewClock(America/Chicago, %s) = %+v, %v", c.locale, clock, ok)
		}
		if got := clock.Spoken(morning, now); got != c.spoken {
			t.Errorf("%s: Spoken = %q, want %q", c.locale, got, c.spoken)
		}
		if got := clock.Spoken(utc("2031-01-03T18:00:00Z"), now); got != c.nextYear {
			t.Errorf("%s: next year = %q, want %q", c.locale, got, c.nextYear)
		}
		if got := clock.Window(morning, evening, now); got != c.window {
			t.Errorf("%s: Window = %q, want %q", c.locale, got, c.window)
		}
		if got := clock.Window(morning, morning.Add(24*time.Hour), now); got != c.overnight {
			t.Errorf("%s: Window across days = %q, want %q", c.locale, got, c.overnight)
		}
	}
	for name, want := range map[string]schedule.Locale{"en-US": schedule.EnUS, "en_gb": schedule.EnGB, "EN-us": schedule.EnUS} {
		if got, err := schedule.ParseLocale(name); err != nil || got != want {
			t.Errorf("ParseLocale(%q) = %q, %v", name, got, err)
		}
	}
	for _, bad := range []string{"", "en", "fr-FR", "english", "en-US "} {
		if _, err := schedule.ParseLocale(bad); err == nil {
			t.Errorf("ParseLocale(%q) accepted", bad)
		}
	}
	for zone, want := range map[string]schedule.Locale{
		"America/Chicago": schedule.EnUS, "America/Los_Angeles": schedule.EnUS, "US/Eastern": schedule.EnUS, "Pacific/Honolulu": schedule.EnUS,
		"Europe/London": schedule.EnGB, "America/Toronto": schedule.EnGB, "UTC": schedule.EnGB, "Australia/Sydney": schedule.EnGB,
	} {
		if got := schedule.DefaultLocale(zone); got != want {
			t.Errorf("DefaultLocale(%s) = %s, want %s", zone, got, want)
		}
	}
	// What only SQL can store is read as UTC and en-GB, and reported.
	if c, ok := schedule.NewClock("Mars/Olympus", "tlh"); ok || c.Zone != "UTC" || c.Locale != schedule.EnGB {
		t.Errorf("NewClock of unknown names = %+v, %v", c, ok)
	}
}

// A local time is read in its zone: one instant, or none when the clocks
// skip it, or two when they repeat it.
func TestInstantReadsAWallTimeInItsZone(t *testing.T) {
	t.Parallel()
	ny := zone(t, "America/New_York")
	wall := func(s string) time.Time {
		w, err := time.Parse("2006-01-02T15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, c := range []struct {
		wall, want string
		err        error
	}{
		{"2031-03-07T15:00", "2031-03-07T20:00:00Z", nil}, // EST
		{"2031-07-07T15:00", "2031-07-07T19:00:00Z", nil}, // EDT
		{"2031-03-09T01:59", "2031-03-09T06:59:00Z", nil}, // just before the clocks go forward
		{"2031-03-09T02:30", "", schedule.ErrSkipped},
		{"2031-03-09T03:00", "2031-03-09T07:00:00Z", nil},
		{"2031-11-02T01:30", "", schedule.ErrRepeated},
		{"2031-11-02T02:00", "2031-11-02T07:00:00Z", nil},
	} {
		got, err := schedule.Instant(wall(c.wall), ny)
		if !errors.Is(err, c.err) || (c.err == nil && got.UTC().Format(time.RFC3339) != c.want) {
			t.Errorf("%s in New York: %v %v, want %s %v", c.wall, got.UTC(), err, c.want, c.err)
		}
	}
	if got, err := schedule.Instant(wall("2031-03-07T15:00"), time.UTC); err != nil || !got.Equal(utc("2031-03-07T15:00:00Z")) {
		t.Errorf("in UTC: %v %v", got, err)
	}
}
