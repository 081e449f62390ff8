package schedule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Hours are a weekday's opening hours in minutes after local midnight;
// End may be 24*60, the midnight that ends the day.
type Hours struct {
	Weekday    time.Weekday
	Start, End int
}

// Plan is a weekly schedule applied to a range of dates.
type Plan struct {
	// Hours may list a weekday more than once (split shifts); they must not overlap.
	Hours []Hours
	// Slot is the length of every slot.
	Slot time.Duration
	// First and Last are the first and last dates, inclusive (only their
	// year, month and day count).
	First, Last time.Time
}

// Span is one slot's start and end.
type Span struct{ Start, End time.Time }

// weekdays are the names schedules use, Monday first.
var weekdays = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// Weekdays lists the weekday names ParseWeekday takes, Monday first.
func Weekdays() []string { return slices.Clone(weekdays) }

// ParseWeekday reads mon, tue, ... sun (any case).
func ParseWeekday(name string) (time.Weekday, bool) {
	i := slices.Index(weekdays, strings.ToLower(name))
	if i < 0 {
		return 0, false
	}
	return time.Weekday((i + 1) % 7), true
}

// WeekdayName is ParseWeekday's inverse.
func WeekdayName(d time.Weekday) string { return weekdays[(int(d)+6)%7] }

var clockPattern = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

// ParseClock reads a wall-clock time HH:MM (24-hour) as minutes after
// midnight; endOfDay also takes 24:00.
func ParseClock(s string, endOfDay bool) (int, bool) {
	if endOfDay && s == "24:00" {
		return 24 * 60, true
	}
	if !clockPattern.MatchString(s) {
		return 0, false
	}
	return int(s[0]-'0')*600 + int(s[1]-'0')*60 + int(s[3]-'0')*10 + int(s[4]-'0'), true
}

// Check reports the first problem of the plan's hours and slot length: a
// window that is empty or reversed, or two windows of a weekday that overlap.
func (p Plan) Check() error {
	if p.Slot <= 0 {
		return fmt.Errorf("the slot length must be positive")
	}
	hours := p.sorted()
	for i, h := range hours {
		if h.Start < 0 || h.End > 24*60 || h.Start >= h.End {
			return fmt.Errorf("the hours of %s must end after they start", WeekdayName(h.Weekday))
		}
		if i > 0 && hours[i-1].Weekday == h.Weekday && h.Start < hours[i-1].End {
			return fmt.Errorf("the hours of %s overlap", WeekdayName(h.Weekday))
		}
	}
	return nil
}

// sorted returns the hours Monday first, then by start.
func (p Plan) sorted() []Hours {
	hours := slices.Clone(p.Hours)
	slices.SortFunc(hours, func(a, b Hours) int {
		if d := (int(a.Weekday)+6)%7 - (int(b.Weekday)+6)%7; d != 0 {
			return d
		}
		return a.Start - b.Start
	})
	return hours
}

// days calls f for every date of the plan, in order, as midnight UTC.
func (p Plan) days(f func(day time.Time)) {
	last := date(p.Last)
	for d := date(p.First); !d.After(last); d = d.AddDate(0, 0, 1) {
		f(d)
	}
}

func date(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// WallCount is the number of slots the plan describes on a clock that never
// changes. In a zone whose clocks change within the range, Slots makes an
// hour's worth more or fewer on the day of each change that falls inside
// the opening hours.
func (p Plan) WallCount() int {
	n, slot := 0, int(p.Slot/time.Minute)
	if slot <= 0 {
		return 0
	}
	p.days(func(day time.Time) {
		for _, h := range p.Hours {
			if h.Weekday == day.Weekday() {
				n += (h.End - h.Start) / slot
			}
		}
	})
	return n
}

// Slots returns the plan's slots in loc, in start order. A day's hours run
// from the instant loc's clock reaches the opening time to the instant it
// reaches the closing time, cut into consecutive slots of the plan's length
// (a rest too short for a slot is left out). Across a clock change they
// last as long as the clock says: the night the clocks go forward has an
// hour less, the night they go back an hour more, and no two slots overlap.
// Wall times follow RFC 5545 (3.3.5): one the clock skips is read with the
// offset before the change, one it shows twice is the first.
func (p Plan) Slots(loc *time.Location) []Span {
	var out []Span
	hours := p.sorted()
	p.days(func(day time.Time) {
		for _, h := range hours {
			if h.Weekday != day.Weekday() {
				continue
			}
			end := At(day, h.End, loc)
			for t := At(day, h.Start, loc); !t.Add(p.Slot).After(end); t = t.Add(p.Slot) {
				out = append(out, Span{Start: t, End: t.Add(p.Slot)})
			}
		}
	})
	return out
}

// At returns the instant at which loc's clock shows minute (after midnight;
// 24*60 is the next midnight) on day's date, by the rules of Slots.
func At(day time.Time, minute int, loc *time.Location) time.Time {
	y, m, d := day.Date()
	wall := time.Date(y, m, d, 0, minute, 0, 0, time.UTC)
	// The offsets in force well before and after: a clock change near wall
	// lies between them (zones change their clocks months apart).
	_, before := wall.Add(-48 * time.Hour).In(loc).Zone()
	_, after := wall.Add(48 * time.Hour).In(loc).Zone()
	offsets := []int{before, after}
	if after > before {
		offsets = []int{after, before} // the larger offset is the earlier instant
	}
	for _, o := range offsets {
		t := wall.Add(-time.Duration(o) * time.Second).In(loc)
		if clock(t) == wall {
			return t
		}
	}
	return wall.Add(-time.Duration(before) * time.Second).In(loc) // skipped
}

// clock is what t's clock shows, as a time in UTC.
func clock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}
