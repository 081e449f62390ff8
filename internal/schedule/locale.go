package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Locale is how a business's times are said to its callers: the order of
// day and month, and the clock. oncecall speaks English; each tenant says
// which English (tenants.locale).
type Locale string

// The locales oncecall speaks.
const (
	// EnUS says "Friday, December 4 at 9:30 AM": the month first, a 12-hour clock.
	EnUS Locale = "en-US"
	// EnGB says "Friday 4 December at 09:30": the day first, a 24-hour clock.
	EnGB Locale = "en-GB"
)

// LocaleNames lists the locales for help texts and errors.
const LocaleNames = "en-US or en-GB"

// ParseLocale reads a locale name, en-US or en-GB; the case and an
// underscore for the hyphen are forgiven (en_us is en-US).
func ParseLocale(name string) (Locale, error) {
	switch strings.ToLower(strings.ReplaceAll(name, "_", "-")) {
	case "en-us":
		return EnUS, nil
	case "en-gb":
		return EnGB, nil
	}
	return "", fmt.Errorf("%q is not a locale oncecall speaks: %s", name, LocaleNames)
}

// usZones are the IANA zones of the United States (tzdata's zone1970.tab
// and the older names that link to them), whose businesses say their
// dates the American way unless they choose otherwise. Migration
// 0028_tenant_locale.sql set the locale of existing tenants from the same
// list.
var usZones = []string{
	"America/Adak", "America/Anchorage", "America/Boise", "America/Chicago", "America/Denver", "America/Detroit",
	"America/Indiana/Indianapolis", "America/Indiana/Knox", "America/Indiana/Marengo", "America/Indiana/Petersburg",
	"America/Indiana/Tell_City", "America/Indiana/Vevay", "America/Indiana/Vincennes", "America/Indiana/Winamac",
	"America/Juneau", "America/Kentucky/Louisville", "America/Kentucky/Monticello", "America/Los_Angeles",
	"America/Menominee", "America/Metlakatla", "America/New_York", "America/Nome", "America/North_Dakota/Beulah",
	"America/North_Dakota/Center", "America/North_Dakota/New_Salem", "America/Phoenix", "America/Sitka",
	"America/Yakutat", "Pacific/Honolulu",
	// Older names.
	"America/Atka", "America/Fort_Wayne", "America/Indianapolis", "America/Knox_IN", "America/Louisville",
	"America/Shiprock", "Navajo",
}

// DefaultLocale is the locale of a business in zone that chooses none:
// en-US in a zone of the United States, en-GB elsewhere.
func DefaultLocale(zone string) Locale {
	if strings.HasPrefix(zone, "US/") || slices.Contains(usZones, zone) {
		return EnUS
	}
	return EnGB
}

// day says t's date: "Friday 4 December" (en-GB) or "Friday, December 4"
// (en-US), with the year when withYear.
func (l Locale) day(t time.Time, withYear bool) string {
	switch {
	case l == EnUS && withYear:
		return t.Format("Monday, January 2, 2006")
	case l == EnUS:
		return t.Format("Monday, January 2")
	case withYear:
		return t.Format("Monday 2 January 2006")
	}
	return t.Format("Monday 2 January")
}

// clock says t's time of day: "09:30" (en-GB) or "9:30 AM" (en-US).
func (l Locale) clock(t time.Time) string {
	if l == EnUS {
		return t.Format("3:04 PM")
	}
	return t.Format("15:04")
}

// Clock is how one business says its times: the zone a time is read in
// and the locale it is spoken in. A tenant has one; each of its locations
// has its own zone (In).
type Clock struct {
	// Zone is Loc's IANA name, as answers name it.
	Zone   string
	Loc    *time.Location
	Locale Locale
}

// NewClock is the clock of an IANA zone and a locale name. A zone the zone
// database lacks is read as UTC, and a locale oncecall does not speak as
// en-GB (both possible only through SQL: oncecall checks what it stores):
// ok reports that neither was replaced, so that the caller can say so.
func NewClock(zone, locale string) (c Clock, ok bool) {
	c.Zone, ok = zone, true
	loc, err := ParseZone(zone)
	if err != nil {
		c.Zone, loc, ok = UTC, time.UTC, false
	}
	l, err := ParseLocale(locale)
	if err != nil {
		l, ok = EnGB, false
	}
	c.Loc, c.Locale = loc, l
	return c, ok
}

// In is the clock of another zone (a location's) in the same locale; a zone
// the zone database lacks leaves c as it is.
func (c Clock) In(zone string) Clock {
	if zone == "" || zone == c.Zone {
		return c
	}
	loc, err := ParseZone(zone)
	if err != nil {
		return c
	}
	return Clock{Zone: zone, Loc: loc, Locale: c.Locale}
}

// Localize puts a range on this clock; now decides whether When names the
// year.
func (c Clock) Localize(start, end, now time.Time) Local {
	return Local{
		StartsAtLocal: start.In(c.Loc).Format(time.RFC3339),
		EndsAtLocal:   end.In(c.Loc).Format(time.RFC3339),
		When:          c.Spoken(start, now),
	}
}

// Spoken says t the way a caller of this business says it: "Friday 5
// December at 14:30" (en-GB) or "Friday, December 5 at 2:30 PM" (en-US),
// with the year ("Friday 5 January 2031 at 09:00") when it is not the year
// of now on this clock. An agent's model rephrases it for the caller.
func (c Clock) Spoken(t, now time.Time) string {
	t = t.In(c.Loc)
	return c.Locale.day(t, t.Year() != now.In(c.Loc).Year()) + " at " + c.Locale.clock(t)
}

// Window says a time window the way a caller says it: "Friday 5 July
// between 14:00 and 16:00" within a day, else "from Friday 5 July at 20:00
// to Saturday 6 July at 09:00" (in en-US "Friday, July 5 between 2:00 PM
// and 4:00 PM"), with the year when it is not now's, as Spoken does.
func (c Clock) Window(start, end, now time.Time) string {
	s, e := start.In(c.Loc), end.In(c.Loc)
	if s.Year() == e.Year() && s.YearDay() == e.YearDay() {
		return c.Locale.day(s, s.Year() != now.In(c.Loc).Year()) + " between " + c.Locale.clock(s) + " and " + c.Locale.clock(e)
	}
	return "from " + c.Spoken(s, now) + " to " + c.Spoken(e, now)
}
