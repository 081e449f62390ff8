package schedule

import (
	"errors"
	"time"
)

// SpokenExactly is Spoken for a time a caller confirms, which must name
// one instant: on the night the clocks go back, a wall-clock time that
// shows twice is said with the zone's abbreviation and which showing it is
// ("Sunday, November 2, 2031 at 1:30 AM EST, the second 1:30 AM that
// night"), and with zoned the abbreviation is said at any time ("... at
// 3:30 PM PDT"), for a time that could be meant on more than one clock.
func (c Clock) SpokenExactly(t, now time.Time, zoned bool) string {
	local := t.In(c.Loc)
	said := c.Spoken(t, now)
	abbreviation, _ := local.Zone()
	first, repeated := Repeated(t, c.Loc)
	switch {
	case repeated:
		which := "the second "
		if first {
			which = "the first "
		}
		return said + " " + abbreviation + ", " + which + c.Locale.clock(local) + " that night"
	case zoned:
		return said + " " + abbreviation
	}
	return said
}

// Repeated reports whether t's wall-clock time in loc shows twice that day
// (the clocks go back over it), and if so whether t is its first showing,
// before the clocks go back.
func Repeated(t time.Time, loc *time.Location) (first, repeated bool) {
	local := t.In(loc)
	if _, err := Instant(clock(local), loc); !errors.Is(err, ErrRepeated) {
		return false, false
	}
	// Of the two offsets in force around it, the larger one is the earlier
	// showing's.
	_, before := local.Add(-48 * time.Hour).Zone()
	_, after := local.Add(48 * time.Hour).Zone()
	_, offset := local.Zone()
	return offset == max(before, after), true
}
