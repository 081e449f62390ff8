package dashatool

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/wire"
)

// SlotsInput is the arguments of find_available_slots (and the query of
// GET /v1/slots).
type SlotsInput struct {
	ServiceID      string  `json:"service_id" format:"uuid" desc:"Optional: only slots fit for this service (from list_services): its practitioner performs it at that location and the slot is long enough for it."`
	PractitionerID string  `json:"practitioner_id" format:"uuid" desc:"Optional: only this practitioner's slots (from list_practitioners)."`
	LocationID     string  `json:"location_id" format:"uuid" desc:"Optional: only slots at this location; today and tomorrow are then read in its timezone."`
	Date           string  `json:"date" maxLength:"10" pattern:"^([0-9]{4}-[0-9]{2}-[0-9]{2}|today|tomorrow)$" desc:"Optional: only slots on this day, local to each slot's location: a day such as 2030-01-02, today or tomorrow. Not with from or to."`
	From           *string `json:"from" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2}))?$" desc:"Optional: list slots starting at or after this time: a day such as 2030-01-02 (from the start of that day in the business's timezone) or an RFC 3339 time such as 2030-01-02T09:00:00Z (default: now)."`
	To             string  `json:"to" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2}))?$" desc:"Optional: list slots starting up to this day (included) or before this RFC 3339 time."`
	PartOfDay      string  `json:"part_of_day" enum:"morning,afternoon,evening" desc:"Optional: only slots starting in this part of the local day: morning before 12:00, afternoon 12:00 to 17:00, evening from 17:00."`
	Limit          *int    `json:"limit" minimum:"1" maximum:"20" desc:"Optional: how many slots to list, 1 to 20 (default 5)."`
	After          string  `json:"after" format:"uuid" desc:"Optional: continue after this slot: the next_after of the previous answer, to hear more times."`
}

// DefaultSlots is how many slots find_available_slots lists by default.
const DefaultSlots = 5

// Parts of the day, by the local minute of the day a slot starts at.
var partsOfDay = map[string][2]int{
	"morning":   {0, 12 * 60},
	"afternoon": {12 * 60, 17 * 60},
	"evening":   {17 * 60, 24 * 60},
}

// fromMessage says what from and to accept.
const fromMessage = "must be a day such as 2030-01-02 or an RFC 3339 time such as 2030-01-02T15:04:05Z"

// Normalize validates the input; a time in From or To is rewritten in UTC,
// a day is kept as it is (Query reads it in each slot's timezone).
func (in *SlotsInput) Normalize() error {
	if err := op.First(op.OptionalID("service_id", &in.ServiceID), op.OptionalID("practitioner_id", &in.PractitionerID),
		op.OptionalID("location_id", &in.LocationID), op.OptionalID("after", &in.After)); err != nil {
		return err
	}
	if in.From != nil {
		*in.From = strings.TrimSpace(*in.From)
		if *in.From == "" || dayOrInstant("from", in.From) != nil {
			return fault.Field("from", fromMessage)
		}
	}
	if in.To = strings.TrimSpace(in.To); in.To != "" && dayOrInstant("to", &in.To) != nil {
		return fault.Field("to", fromMessage)
	}
	switch in.Date = strings.ToLower(strings.TrimSpace(in.Date)); {
	case in.Date == "" || in.Date == "today" || in.Date == "tomorrow":
	case !isDay(in.Date):
		return fault.Field("date", "must be a day such as 2030-01-02, today or tomorrow")
	}
	if in.Date != "" && (in.From != nil || in.To != "") {
		return fault.Field("date", "give either date or from and to, not both")
	}
	if in.PartOfDay = strings.ToLower(strings.TrimSpace(in.PartOfDay)); in.PartOfDay != "" {
		if _, ok := partsOfDay[in.PartOfDay]; !ok {
			return fault.Field("part_of_day", "must be morning, afternoon or evening")
		}
	}
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > 20) {
		return fault.Field("limit", "must be an integer from 1 to 20")
	}
	return nil
}

func isDay(s string) bool {
	d, err := time.Parse(time.DateOnly, s)
	return err == nil && d.Format(time.DateOnly) == s
}

// dayOrInstant keeps a day as it is and rewrites an instant in UTC.
func dayOrInstant(field string, v *string) error {
	if isDay(*v) {
		return nil
	}
	return op.Time(field, v)
}

// Catalog reports whether the input names a service, practitioner or
// location.
func (in SlotsInput) Catalog() bool {
	return in.ServiceID != "" || in.PractitionerID != "" || in.LocationID != ""
}

// N is how many slots to list.
func (in SlotsInput) N() int {
	if in.Limit == nil {
		return DefaultSlots
	}
	return *in.Limit
}

// dayReach bounds how far a local day reaches from the same day in UTC.
const dayReach = 15 * time.Hour

// Query returns what to look for: the free slots from now on that the input
// selects, at most N. Today and tomorrow are read in loc (the location's
// timezone when the input names one, else the tenant's); a day in date,
// from or to is the local day of each slot's own timezone (tenantZone for
// a slot of the single calendar).
func (in SlotsInput) Query(now time.Time, loc *time.Location, tenantZone string) oncecall.OpenSlotQuery {
	q := oncecall.OpenSlotQuery{
		From: now, MinMinute: -1, MaxMinute: -1, OnlyAvailable: true, TenantZone: tenantZone, Limit: in.N(),
		ServiceID: op.OptionalUUID(in.ServiceID), PractitionerID: op.OptionalUUID(in.PractitionerID),
		LocationID: op.OptionalUUID(in.LocationID), After: op.OptionalUUID(in.After),
	}
	from, to := "", in.To
	if in.From != nil {
		from = *in.From
	}
	switch in.Date {
	case "":
	case "today":
		from = now.In(loc).Format(time.DateOnly)
		to = from
	case "tomorrow":
		l := now.In(loc)
		from = time.Date(l.Year(), l.Month(), l.Day()+1, 12, 0, 0, 0, loc).Format(time.DateOnly)
		to = from
	default:
		from, to = in.Date, in.Date
	}
	if from != "" {
		if isDay(from) {
			q.FromDate = from
			d, _ := time.Parse(time.DateOnly, from)
			q.From = later(q.From, d.Add(-dayReach))
		} else if t, err := time.Parse(time.RFC3339Nano, from); err == nil {
			q.From = later(q.From, t)
		}
	}
	if to != "" {
		if isDay(to) {
			q.ToDate = to
			d, _ := time.Parse(time.DateOnly, to)
			q.To = d.AddDate(0, 0, 1).Add(dayReach)
		} else if t, err := time.Parse(time.RFC3339Nano, to); err == nil {
			q.To = t
		}
	}
	if p, ok := partsOfDay[in.PartOfDay]; ok {
		q.MinMinute, q.MaxMinute = p[0], p[1]
		if p[0] == 0 {
			q.MinMinute = -1
		}
		if p[1] == 24*60 {
			q.MaxMinute = -1
		}
	}
	return q
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// SlotView is a free slot as a voice agent hears it: its times in its own
// timezone as well and, for a slot of a practitioner, who and where. A
// slot of the single calendar has the shape it always had.
type SlotView struct {
	wire.Slot
	schedule.Local
	// The practitioner's and the location's ids are the slot's.
	Practitioner string `json:"practitioner,omitempty"`
	Location     string `json:"location,omitempty"`
	Address      string `json:"address,omitempty"`
	Timezone     string `json:"timezone,omitempty"`
}

// SlotViews are the views of slots, each said on the tenant's clock in its
// own timezone; a zone the zone database lacks is read as the tenant's.
func SlotViews(slots []oncecall.OpenSlot, tenant schedule.Clock, now time.Time) []SlotView {
	out := make([]SlotView, len(slots))
	for i, s := range slots {
		out[i] = SlotView{Slot: wire.FromSlot(s.Slot), Local: tenant.In(s.Timezone).Localize(s.StartsAt, s.EndsAt, now)}
		if s.Catalog() {
			out[i].Practitioner, out[i].Location, out[i].Address = s.Practitioner, s.Location, s.Address
			out[i].Timezone = s.Timezone
		}
	}
	return out
}

// SlotsAnswer answers find_available_slots: details holds the timezone of
// the business, the slots and, when there may be more, next_after.
func SlotsAnswer(zone string, views []SlotView, more bool) Answer {
	d := map[string]any{"timezone": zone, "slots": views}
	if more && len(views) > 0 {
		d["next_after"] = views[len(views)-1].ID.String()
	}
	details, _ := json.Marshal(d)
	say := SlotsSay(len(views))
	for _, v := range views {
		if v.PractitionerID != "" {
			say += " A slot with a practitioner is said in its location's local time (its timezone): name the practitioner " +
				"and the location with the time."
			break
		}
	}
	if more && len(views) > 0 {
		say += " If none suits the caller, call find_available_slots again with the same arguments and next_after as after to hear more."
	}
	return Answer{Outcome: string(oncecall.Confirmed), Say: say, Details: details}
}

// AlternativesSaid says the alternatives of a booking by service that
// found no practitioner free (SlotViews as JSON), for the answer's say.
func AlternativesSaid(raw json.RawMessage) string {
	var alts []struct {
		When         string `json:"when"`
		Practitioner string `json:"practitioner"`
		Location     string `json:"location"`
	}
	if json.Unmarshal(raw, &alts) != nil {
		return ""
	}
	if len(alts) == 0 {
		return "No other free time was found for it; ask the caller whether another day would suit them and look again with find_available_slots."
	}
	said := make([]string, len(alts))
	for i, a := range alts {
		said[i] = a.When
		if a.Practitioner != "" {
			said[i] += " with " + a.Practitioner
		}
		if a.Location != "" {
			said[i] += " at " + a.Location
		}
	}
	return "The next free times: " + strings.Join(said, "; ") + "."
}
