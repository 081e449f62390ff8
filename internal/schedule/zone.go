// Package schedule owns wall-clock time: a tenant's timezone and locale,
// weekly opening hours turned into slots across clock changes, and times
// put the way the business's callers say them (a Clock).
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// UTC is the timezone of a tenant that names none.
const UTC = "UTC"

// MaxZoneLen bounds a timezone name (the longest IANA name is 32).
const MaxZoneLen = 64

// ParseZone loads an IANA timezone such as Europe/London. It refuses
// "Local" and the empty name: a business's times must not depend on the
// machine that reads them. The binary embeds the zone database
// (time/tzdata), so every name Go knows loads on any machine.
func ParseZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" || strings.TrimSpace(name) != name || len(name) > MaxZoneLen {
		return nil, fmt.Errorf("%q is not an IANA timezone name such as Europe/London", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not an IANA timezone name such as Europe/London", name)
	}
	return loc, nil
}

// Local is a time range as the business's callers know it.
type Local struct {
	// StartsAtLocal and EndsAtLocal are RFC 3339 times with the zone's
	// offset at that moment, e.g. 2030-07-05T14:30:00+01:00.
	StartsAtLocal string `json:"starts_at_local"`
	EndsAtLocal   string `json:"ends_at_local"`
	// When is the start as a person says it, e.g. "Friday 5 July at 14:30"
	// (see Clock.Spoken).
	When string `json:"when"`
}

// The wall-clock times that name no single instant in a zone.
var (
	// ErrSkipped: the clocks go forward past it, so it never shows.
	ErrSkipped = errors.New("the clocks go forward past it that day")
	// ErrRepeated: the clocks go back over it, so it shows twice.
	ErrRepeated = errors.New("the clocks go back over it that day, so it is said twice")
)

// Instant is the instant at which loc's clock shows wall (its date and
// clock, whatever its own zone): a local time read in the zone it is said
// in. A wall time the clocks skip or repeat is ErrSkipped or ErrRepeated.
func Instant(wall time.Time, loc *time.Location) (time.Time, error) {
	w := clock(wall)
	// The offsets in force well before and after: a clock change near w
	// lies between them (see At).
	_, before := w.Add(-48 * time.Hour).In(loc).Zone()
	_, after := w.Add(48 * time.Hour).In(loc).Zone()
	var found []time.Time
	for _, o := range []int{before, after} {
		t := w.Add(-time.Duration(o) * time.Second).In(loc)
		if clock(t).Equal(w) && (len(found) == 0 || !found[0].Equal(t)) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return time.Time{}, ErrSkipped
	case 2:
		return time.Time{}, ErrRepeated
	}
	return found[0], nil
}
