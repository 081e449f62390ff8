package booking

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
)

// Bounds of one slot.schedule request.
const (
	// MaxScheduledSlots is the most slots one request may describe.
	MaxScheduledSlots = 2000
	// MaxScheduleDays is the longest date range, from to to.
	MaxScheduleDays = 366
	maxWeeklyHours  = 50
)

// ScheduleInput is the input of slot.schedule.
type ScheduleInput struct {
	Resource    string        `json:"resource" maxLength:"200" desc:"Optional: who or what the slots are with. A time the resource already has a slot at (same start and end) is skipped."`
	Hours       []WeeklyHours `json:"hours" required:"true" desc:"The opening hours of each weekday, 1 to 50 entries; a weekday may have several that do not overlap, a weekday without any is closed."`
	SlotMinutes op.Integer    `json:"slot_minutes" required:"true" minimum:"5" maximum:"1440" desc:"The length of every slot in minutes; each day's hours are cut into consecutive slots and a rest too short for one is left out."`
	From        string        `json:"from" required:"true" format:"date" desc:"The first date, YYYY-MM-DD, in the timezone."`
	To          string        `json:"to" required:"true" format:"date" desc:"The last date (inclusive), at most 366 days after from."`
	Timezone    string        `json:"timezone" maxLength:"64" desc:"Optional: the IANA timezone the hours are in, e.g. Europe/London (default: the location's with location_id, else the tenant's)."`
	// A practitioner's schedule at a location: both or neither.
	PractitionerID string `json:"practitioner_id,omitempty" format:"uuid" desc:"Optional, with location_id: the practitioner whose slots these are (their name is the slots' resource). A time that overlaps another slot of theirs, at any location, is skipped."`
	LocationID     string `json:"location_id,omitempty" format:"uuid" desc:"Optional, with practitioner_id: the location of the slots, one the practitioner works at."`
}

// WeeklyHours are one weekday's opening hours, on the local wall clock.
type WeeklyHours struct {
	Weekday string `json:"weekday" required:"true" enum:"mon,tue,wed,thu,fri,sat,sun" desc:"The weekday."`
	Start   string `json:"start" required:"true" pattern:"^([01][0-9]|2[0-3]):[0-5][0-9]$" desc:"Opening time, HH:MM (24-hour)."`
	End     string `json:"end" required:"true" pattern:"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$" desc:"Closing time, HH:MM after start; 24:00 is midnight at the end of the day."`
}

// ScheduleResult is what slot.schedule did.
type ScheduleResult struct {
	Resource string `json:"resource"`
	// PractitionerID and LocationID are the schedule's practitioner and
	// location; absent for the single calendar.
	PractitionerID string `json:"practitioner_id,omitempty"`
	LocationID     string `json:"location_id,omitempty"`
	Timezone       string `json:"timezone"`
	From           string `json:"from"`
	To             string `json:"to"`
	SlotMinutes    int64  `json:"slot_minutes"`
	// Created is how many slots were created; Skipped how many of the
	// schedule's slots were not: SkippedExisting because the resource had a
	// slot with the same start and end, SkippedPast because they start
	// before the request ran.
	Created         int `json:"created"`
	Skipped         int `json:"skipped"`
	SkippedExisting int `json:"skipped_existing"`
	SkippedPast     int `json:"skipped_past"`
	// SkippedOverlapping, for a practitioner's schedule, counts the times
	// that overlap another slot of theirs (at any location, or at this one
	// with other times).
	SkippedOverlapping *int `json:"skipped_overlapping,omitempty"`
}

// ScheduleSlots creates the slots of a weekly schedule over a date range.
// Applying it again, or a schedule whose range overlaps, creates only the
// slots the resource does not have yet. It is not offered to voice agents.
var ScheduleSlots = family.Add(op.Define(op.Spec[ScheduleInput]{
	Name:    "slot.schedule",
	Label:   "Slots from weekly hours",
	Version: 1,
	Logic:   scheduleSlotsOp{},
	Say: op.Phrases{
		Confirmed: "The schedule's slots are created.",
		Rejected: map[string]string{
			PractitionerNotFound:      "The practitioner does not exist; no slot was created.",
			PractitionerNotAtLocation: "The practitioner does not work at that location; no slot was created.",
			"":                        "The schedule's slots were not created.",
		},
		Pending: "The schedule is NOT confirmed yet; its result is unknown.",
	},
}))

// scheduleSlotsOp is the logic of ScheduleSlots.
type scheduleSlotsOp struct{}

func (scheduleSlotsOp) Normalize(in *ScheduleInput) error { return normalizeSchedule(in) }

func (scheduleSlotsOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in ScheduleInput) (idem.Result, error) {
	var whose db.PractitionerSlots
	zone := in.Timezone
	if in.PractitionerID != "" {
		p, place, rejected, err := practitionerAt(ctx, tx, x.TenantID, in.PractitionerID, in.LocationID)
		if err != nil || rejected != nil {
			return deref(rejected), err
		}
		whose, in.Resource = p, p.Resource
		if zone == "" {
			zone = place.Timezone
		}
	}
	if zone == "" {
		var err error
		if zone, err = tx.TenantTimezone(ctx, x.TenantID); err != nil {
			return idem.Result{}, err
		}
	}
	loc, err := schedule.ParseZone(zone)
	if err != nil {
		// A rollback: nothing is claimed, the caller can name a zone.
		zoneOf := "the tenant's"
		if in.PractitionerID != "" && in.Timezone == "" {
			zoneOf = "the location's"
		}
		return idem.Result{}, fault.Field("timezone", "is required: %s timezone %q is not in the zone database", zoneOf, zone)
	}
	res := ScheduleResult{
		Resource: in.Resource, PractitionerID: in.PractitionerID, LocationID: in.LocationID,
		Timezone: zone, From: in.From, To: in.To, SlotMinutes: in.SlotMinutes.Int64(),
	}
	now := time.Now()
	var times []db.SlotTime
	for _, s := range plan(in).Slots(loc) {
		if !s.Start.After(now) {
			res.SkippedPast++
			continue
		}
		times = append(times, db.SlotTime{StartsAt: s.Start, EndsAt: s.End})
	}
	if in.PractitionerID != "" {
		got, err := placePractitionerSlots(ctx, tx, whose, times)
		if err != nil {
			return idem.Result{}, err
		}
		res.Created, res.SkippedExisting, res.SkippedOverlapping = len(got.created), got.existing, &got.overlapping
		res.Skipped = res.SkippedExisting + res.SkippedPast + got.overlapping
	} else {
		if res.Created, err = tx.ScheduleSlots(ctx, x.TenantID, in.Resource, times); err != nil {
			return idem.Result{}, err
		}
		res.SkippedExisting = len(times) - res.Created
		res.Skipped = res.SkippedExisting + res.SkippedPast
	}
	status := http.StatusOK
	if res.Created > 0 {
		status = http.StatusCreated
	}
	// No single record is made: the action itself names the result.
	return op.Confirm(status, x.ActionID.String(), res)
}

func normalizeSchedule(in *ScheduleInput) error {
	if err := op.First(op.Text("resource", &in.Resource, 200, false), owner(&in.PractitionerID, &in.LocationID, &in.Resource)); err != nil {
		return err
	}
	switch {
	case len(in.Hours) == 0:
		return fault.Field("hours", "is required: give at least one weekday's opening hours")
	case len(in.Hours) > maxWeeklyHours:
		return fault.Field("hours", "must have at most %d entries", maxWeeklyHours)
	}
	for i := range in.Hours {
		h := &in.Hours[i]
		field := fmt.Sprintf("hours[%d]", i)
		h.Weekday = strings.ToLower(strings.TrimSpace(h.Weekday))
		if _, ok := schedule.ParseWeekday(h.Weekday); !ok {
			return fault.Field(field+".weekday", "must be one of %s", strings.Join(schedule.Weekdays(), ", "))
		}
		start, ok := schedule.ParseClock(h.Start, false)
		if !ok {
			return fault.Field(field+".start", "must be a time HH:MM such as 09:00")
		}
		end, ok := schedule.ParseClock(h.End, true)
		if !ok {
			return fault.Field(field+".end", "must be a time HH:MM such as 17:00, or 24:00")
		}
		if end <= start {
			return fault.Field(field+".end", "must be after start (hours that pass midnight are two entries: until 24:00, and from 00:00 the next day)")
		}
	}
	if err := op.Int("slot_minutes", &in.SlotMinutes, 5, 24*60); err != nil {
		return err
	}
	from, err := dateField("from", in.From)
	if err != nil {
		return err
	}
	to, err := dateField("to", in.To)
	if err != nil {
		return err
	}
	switch {
	case to.Before(from):
		return fault.Field("to", "must not be before from")
	case to.Sub(from) > MaxScheduleDays*24*time.Hour:
		return fault.Field("to", "must be at most %d days after from", MaxScheduleDays)
	}
	if in.Timezone = strings.TrimSpace(in.Timezone); in.Timezone != "" {
		if _, err := schedule.ParseZone(in.Timezone); err != nil {
			return fault.Field("timezone", "must be an IANA timezone name such as Europe/London")
		}
	}
	p := plan(*in)
	if err := p.Check(); err != nil {
		return fault.Field("hours", "are not valid: %s", err.Error())
	}
	// Equivalent schedules are one input: the hours in weekday order.
	slices.SortFunc(in.Hours, func(a, b WeeklyHours) int {
		if d := slices.Index(schedule.Weekdays(), a.Weekday) - slices.Index(schedule.Weekdays(), b.Weekday); d != 0 {
			return d
		}
		return strings.Compare(a.Start, b.Start) // HH:MM sorts as text
	})
	switch n := p.WallCount(); {
	case n == 0:
		return fault.Field("hours", "make no slot between from and to: no opening day falls in the range, or slot_minutes is longer than the hours")
	case n > MaxScheduledSlots:
		return fault.Field("to", "makes the schedule %d slots, more than the %d one request may create: shorten the range or lengthen slot_minutes", n, MaxScheduledSlots)
	}
	return nil
}

// dateField reads a date YYYY-MM-DD.
func dateField(field, v string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, v)
	if err != nil || d.Format(time.DateOnly) != v {
		if v == "" {
			return time.Time{}, fault.Field(field, "is required")
		}
		return time.Time{}, fault.Field(field, "must be a date YYYY-MM-DD such as 2030-01-07")
	}
	return d, nil
}

// plan reads a checked input.
func plan(in ScheduleInput) schedule.Plan {
	p := schedule.Plan{Slot: time.Duration(in.SlotMinutes.Int64()) * time.Minute}
	p.First, _ = time.Parse(time.DateOnly, in.From)
	p.Last, _ = time.Parse(time.DateOnly, in.To)
	for _, h := range in.Hours {
		d, _ := schedule.ParseWeekday(h.Weekday)
		start, _ := schedule.ParseClock(h.Start, false)
		end, _ := schedule.ParseClock(h.End, true)
		p.Hours = append(p.Hours, schedule.Hours{Weekday: d, Start: start, End: end})
	}
	return p
}
