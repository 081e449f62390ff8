package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// slotClinic is a tenant with locations, practitioners and services, made
// with SQL (the catalog's own operations are not what these tests are
// about).
type slotClinic struct {
	t      *testing.T
	e      *apptest.Env
	tenant uuid.UUID
	key    string
}

func newSlotClinic(t *testing.T, e *apptest.Env, name, org, zone string) slotClinic {
	tn, key := zonedTenant(t, e, name, org, zone)
	return slotClinic{t: t, e: e, tenant: tn.ID, key: key}
}

func (c slotClinic) exec(sql string, args ...any) {
	c.t.Helper()
	if _, err := c.e.Store.Pool().Exec(c.t.Context(), sql, args...); err != nil {
		c.t.Fatalf("%s: %v", sql, err)
	}
}

func (c slotClinic) location(name, zone string) uuid.UUID {
	id := uuid.New()
	c.exec("INSERT INTO locations (id, tenant_id, name, timezone, address) VALUES ($1, $2, $3, $4, $5)",
		id, c.tenant, name, zone, "1 "+name+" Street")
	return id
}

// practitioner works at locs and performs services.
func (c slotClinic) practitioner(name string, locs []uuid.UUID, services ...uuid.UUID) uuid.UUID {
	id := uuid.New()
	c.exec("INSERT INTO practitioners (id, tenant_id, name) VALUES ($1, $2, $3)", id, c.tenant, name)
	for _, l := range locs {
		c.exec("INSERT INTO practitioner_locations (tenant_id, practitioner_id, location_id) VALUES ($1, $2, $3)", c.tenant, id, l)
	}
	for _, s := range services {
		c.exec("INSERT INTO practitioner_services (tenant_id, practitioner_id, service_id) VALUES ($1, $2, $3)", c.tenant, id, s)
	}
	return id
}

func (c slotClinic) service(name string, minutes, buffer int) uuid.UUID {
	id := uuid.New()
	c.exec("INSERT INTO services (id, tenant_id, name, duration_minutes, buffer_minutes, price_amount, currency) "+
		"VALUES ($1, $2, $3, $4, $5, 6000, 'gbp')", id, c.tenant, name, minutes, buffer)
	return id
}

// slot is a slot of practitioner p at location l.
func (c slotClinic) slot(p, l uuid.UUID, start time.Time, minutes int) uuid.UUID {
	id := uuid.New()
	c.exec("INSERT INTO slots (id, tenant_id, starts_at, ends_at, resource, practitioner_id, location_id) VALUES ($1, $2, $3, $4, '', $5, $6)",
		id, c.tenant, start, start.Add(time.Duration(minutes)*time.Minute), p, l)
	return id
}

// offered is a slot as find_available_slots offers it.
type offered struct {
	ID             string `json:"id"`
	StartsAt       string `json:"starts_at"`
	StartsAtLocal  string `json:"starts_at_local"`
	When           string `json:"when"`
	PractitionerID string `json:"practitioner_id"`
	Practitioner   string `json:"practitioner"`
	LocationID     string `json:"location_id"`
	Location       string `json:"location"`
	Timezone       string `json:"timezone"`
}

type offer struct {
	Timezone  string    `json:"timezone"`
	Slots     []offered `json:"slots"`
	NextAfter string    `json:"next_after"`
}

// find calls find_available_slots over the Dasha route.
func (c slotClinic) find(args map[string]any) (answer, offer) {
	c.t.Helper()
	a := decodeAnswer(c.t, c.e.Post("/v1/dasha/tools/find_available_slots", c.key, "", payload("find_available_slots", "call_find", args)))
	var o offer
	if a.Outcome == "confirmed" {
		decodeDetails(c.t, a, &o)
	}
	return a, o
}

func ids(o offer) []string {
	out := make([]string, len(o.Slots))
	for i, s := range o.Slots {
		out[i] = s.ID
	}
	return out
}

func wantSlots(t *testing.T, what string, o offer, want ...uuid.UUID) {
	t.Helper()
	w := make([]string, len(want))
	for i, id := range want {
		w[i] = id.String()
	}
	if strings.Join(ids(o), ",") != strings.Join(w, ",") {
		t.Errorf("%s: offered %v, want %v", what, ids(o), w)
	}
}

// localDay is the day d days from today in loc, at hour:minute there.
func localDay(loc *time.Location, d, hour, minute int) time.Time {
	n := time.Now().In(loc)
	return time.Date(n.Year(), n.Month(), n.Day()+d, hour, minute, 0, 0, loc)
}

// onDateOf is hour:minute in loc on day's calendar date: slots of two zones
// on one date, whatever the time of day (today in New York is yesterday in
// London for five hours of every day).
func onDateOf(day time.Time, loc *time.Location, hour, minute int) time.Time {
	return time.Date(day.Year(), day.Month(), day.Day(), hour, minute, 0, 0, loc)
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestFindAvailableSlotsByServicePractitionerAndLocation: each filter, a
// practitioner at two locations in different zones (each slot said in its
// location's time), a booked slot left out, a service offered only where
// its practitioner performs it and the slot is long enough.
func TestFindAvailableSlotsByServicePractitionerAndLocation(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	london, newYork := mustZone(t, "Europe/London"), mustZone(t, "America/New_York")
	downtown := c.location("Downtown", "Europe/London")
	uptown := c.location("Uptown", "America/New_York")
	cleaning := c.service("Cleaning", 30, 10)
	whitening := c.service("Whitening", 60, 0)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{downtown, uptown}, cleaning)
	lee := c.practitioner("Dr. Lee", []uuid.UUID{downtown}, cleaning, whitening)

	day := localDay(london, 3, 9, 0)
	ortizDowntown := c.slot(ortiz, downtown, day, 45)                       // 09:00 London
	leeDowntown := c.slot(lee, downtown, day.Add(time.Hour), 45)            // 10:00 London, too short for whitening
	leeLong := c.slot(lee, downtown, day.Add(2*time.Hour), 60)              // 11:00 London
	ortizUptown := c.slot(ortiz, uptown, onDateOf(day, newYork, 10, 0), 45) // 10:00 New York, 15:00 London
	short := c.slot(lee, downtown, day.Add(3*time.Hour), 30)                // too short for cleaning's 30 + 10
	taken := c.slot(ortiz, downtown, day.Add(5*time.Hour), 45)
	calendar := slotAt(t, e, c.tenant, day.Add(7*time.Hour), "Chair") // the single calendar
	bookREST(t, e, c.key, e.Customer(c.tenant), taken)

	_, all := c.find(map[string]any{"limit": 20})
	wantSlots(t, "no filter", all, ortizDowntown, leeDowntown, leeLong, short, ortizUptown, calendar)
	for _, s := range all.Slots {
		switch s.ID {
		case ortizUptown.String():
			if s.Practitioner != "Dr. Ortiz" || s.Location != "Uptown" || s.Timezone != "America/New_York" ||
				s.StartsAtLocal != onDateOf(day, newYork, 10, 0).Format(time.RFC3339) || !strings.Contains(s.When, "10:00") {
				t.Errorf("uptown slot not said in New York's time: %+v", s)
			}
		case ortizDowntown.String():
			if s.Practitioner != "Dr. Ortiz" || s.Location != "Downtown" || s.Timezone != "Europe/London" || s.PractitionerID != ortiz.String() ||
				s.LocationID != downtown.String() {
				t.Errorf("downtown slot: %+v", s)
			}
		case calendar.String():
			if s.Practitioner != "" || s.Timezone != "" || s.PractitionerID != "" {
				t.Errorf("a single-calendar slot gained catalog fields: %+v", s)
			}
		}
	}
	_, o := c.find(map[string]any{"service_id": cleaning.String(), "limit": 20})
	wantSlots(t, "cleaning", o, ortizDowntown, leeDowntown, leeLong, ortizUptown)
	_, o = c.find(map[string]any{"service_id": whitening.String(), "limit": 20})
	wantSlots(t, "whitening (60 minutes: only Dr. Lee's hour)", o, leeLong)
	_, o = c.find(map[string]any{"practitioner_id": ortiz.String(), "limit": 20})
	wantSlots(t, "Dr. Ortiz", o, ortizDowntown, ortizUptown)
	_, o = c.find(map[string]any{"location_id": uptown.String(), "limit": 20})
	wantSlots(t, "Uptown", o, ortizUptown)
	_, o = c.find(map[string]any{"service_id": cleaning.String(), "practitioner_id": lee.String(), "location_id": downtown.String()})
	wantSlots(t, "cleaning with Dr. Lee downtown", o, leeDowntown, leeLong)
	_, o = c.find(map[string]any{"practitioner_id": uuid.NewString()})
	wantSlots(t, "an unknown practitioner", o)

	a, _ := c.find(map[string]any{"location_id": uuid.NewString()})
	if a.Reason != "invalid_arguments" || !strings.Contains(string(a.Details), "location_id") {
		t.Errorf("unknown location: %+v", a)
	}
	for _, bad := range []map[string]any{
		{"service_id": "cleaning"}, {"date": "next week"}, {"part_of_day": "night"}, {"after": "last"},
		{"date": "tomorrow", "from": "2030-01-02"}, {"to": "soon"},
	} {
		if a, _ := c.find(bad); a.Reason != "invalid_arguments" {
			t.Errorf("%v: %+v", bad, a)
		}
	}

	// REST: the same filters as query parameters.
	r := e.Get("/v1/slots?available=true&service_id="+cleaning.String()+"&location_id="+uptown.String(), c.key)
	var list struct {
		Slots []offered `json:"slots"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &list) != nil || len(list.Slots) != 1 || list.Slots[0].ID != ortizUptown.String() ||
		list.Slots[0].Timezone != "America/New_York" || list.Slots[0].Practitioner != "Dr. Ortiz" {
		t.Errorf("GET /v1/slots by service and location: %d %s", r.Status, r.Body)
	}
	if r := e.Get("/v1/slots?part_of_day=noon", c.key); r.Status != http.StatusBadRequest {
		t.Errorf("bad part_of_day: %d %s", r.Status, r.Body)
	}
}

// TestFindAvailableSlotsByDayAndPartOfDay: a plain date, today and
// tomorrow, from and to as days, parts of the day on the local clock, and
// the old answer of a single-calendar tenant.
func TestFindAvailableSlotsByDayAndPartOfDay(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	ny := mustZone(t, "America/New_York")
	uptown := c.location("Uptown", "America/New_York")
	cleaning := c.service("Cleaning", 30, 0)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{uptown}, cleaning)
	morning := c.slot(ortiz, uptown, localDay(ny, 1, 9, 0), 30)
	noon := c.slot(ortiz, uptown, localDay(ny, 1, 12, 0), 30)
	afternoon := c.slot(ortiz, uptown, localDay(ny, 1, 16, 30), 30)
	evening := c.slot(ortiz, uptown, localDay(ny, 1, 17, 0), 30)
	dayAfter := c.slot(ortiz, uptown, localDay(ny, 2, 9, 0), 30)
	// Tomorrow in New York (tomorrow is read in the location's zone).
	tomorrow := localDay(ny, 1, 0, 0).Format(time.DateOnly)
	by := func(args map[string]any) offer {
		args["location_id"], args["limit"] = uptown.String(), 20
		_, o := c.find(args)
		return o
	}
	wantSlots(t, "tomorrow", by(map[string]any{"date": "tomorrow"}), morning, noon, afternoon, evening)
	wantSlots(t, "plain date", by(map[string]any{"date": tomorrow}), morning, noon, afternoon, evening)
	wantSlots(t, "morning", by(map[string]any{"date": tomorrow, "part_of_day": "morning"}), morning)
	wantSlots(t, "afternoon", by(map[string]any{"date": "tomorrow", "part_of_day": "afternoon"}), noon, afternoon)
	wantSlots(t, "evening", by(map[string]any{"date": tomorrow, "part_of_day": "evening"}), evening)
	wantSlots(t, "from a day", by(map[string]any{"from": localDay(ny, 2, 0, 0).Format(time.DateOnly)}), dayAfter)
	wantSlots(t, "to a day", by(map[string]any{"to": tomorrow}), morning, noon, afternoon, evening)
	wantSlots(t, "mornings from tomorrow on", by(map[string]any{"from": tomorrow, "part_of_day": "morning"}), morning, dayAfter)
	wantSlots(t, "to an instant", by(map[string]any{"to": localDay(ny, 1, 12, 0).UTC().Format(time.RFC3339)}), morning)
	wantSlots(t, "today", by(map[string]any{"date": "today"}))

	// A single-calendar tenant: the old answer, from a day or a time.
	shop, key := zonedTenant(t, e, "shop", "org_shop", "Europe/London")
	london := mustZone(t, "Europe/London")
	first := slotAt(t, e, shop.ID, localDay(london, 1, 14, 0), "Chair")
	slotAt(t, e, shop.ID, localDay(london, 2, 9, 0), "Chair")
	body := payload("find_available_slots", "c", map[string]any{"date": "tomorrow", "part_of_day": "afternoon"})
	body["orgId"] = "org_shop"
	a := decodeAnswer(t, e.Post("/v1/dasha/tools/find_available_slots", key, "", body))
	var old map[string]json.RawMessage
	decodeDetails(t, a, &old)
	var slots []map[string]any
	if err := json.Unmarshal(old["slots"], &slots); err != nil || len(slots) != 1 || slots[0]["id"] != first.String() || len(old) != 2 {
		t.Fatalf("single calendar, tomorrow afternoon: %s", a.Details)
	}
	for _, k := range []string{"id", "starts_at", "ends_at", "resource", "available", "starts_at_local", "ends_at_local", "when"} {
		if _, ok := slots[0][k]; !ok {
			t.Errorf("single-calendar slot lacks %s: %v", k, slots[0])
		}
	}
	if len(slots[0]) != 8 {
		t.Errorf("single-calendar slot has other fields: %v", slots[0])
	}
}

// TestFindAvailableSlotsPagesWithAfter: at most limit slots, and
// next_after to hear more, until none is left.
func TestFindAvailableSlotsPagesWithAfter(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	loc := c.location("Downtown", "Europe/London")
	cleaning := c.service("Cleaning", 30, 0)
	a := c.practitioner("Dr. Adams", []uuid.UUID{loc}, cleaning)
	b := c.practitioner("Dr. Baker", []uuid.UUID{loc}, cleaning)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour)
	var want []uuid.UUID
	for i := range 4 { // two practitioners at each time: a page may end between them
		at := start.Add(time.Duration(i) * time.Hour)
		want = append(want, c.slot(a, loc, at, 30), c.slot(b, loc, at, 30))
	}
	var got []uuid.UUID
	after := ""
	for page := 0; ; page++ {
		args := map[string]any{"service_id": cleaning.String(), "limit": 3}
		if after != "" {
			args["after"] = after
		}
		ans, o := c.find(args)
		if len(o.Slots) > 3 || page > 3 {
			t.Fatalf("page %d: %s", page, ans.Details)
		}
		for _, s := range o.Slots {
			got = append(got, uuid.MustParse(s.ID))
		}
		if (o.NextAfter != "") != strings.Contains(ans.Say, "next_after") {
			t.Errorf("say and next_after disagree: %+v", ans)
		}
		if o.NextAfter == "" {
			break
		}
		if o.NextAfter != o.Slots[len(o.Slots)-1].ID {
			t.Errorf("next_after %s is not the last slot offered", o.NextAfter)
		}
		after = o.NextAfter
	}
	wantSlots(t, "all pages", offer{Slots: func() []offered {
		out := make([]offered, len(got))
		for i, id := range got {
			out[i].ID = id.String()
		}
		return out
	}()}, sortedByStartThenID(t, e, want)...)
}

// sortedByStartThenID is ids in the order slots are offered.
func sortedByStartThenID(t *testing.T, e *apptest.Env, ids []uuid.UUID) []uuid.UUID {
	rows, err := e.Store.Pool().Query(t.Context(), "SELECT id FROM slots WHERE id = ANY($1) ORDER BY starts_at, id", ids)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// TestFindAvailableSlotsOnClockChangeDays: Europe/London's last Sundays
// of March and October 2027: a day and a part of the day are read on the
// wall clock, whatever the UTC offset.
func TestFindAvailableSlotsOnClockChangeDays(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "America/New_York") // the tenant's zone is not the location's
	london := mustZone(t, "Europe/London")
	loc := c.location("Downtown", "Europe/London")
	cleaning := c.service("Cleaning", 30, 0)
	p := c.practitioner("Dr. Ortiz", []uuid.UUID{loc}, cleaning)
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, london)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	// 28 March 2027: 01:00 GMT becomes 02:00 BST.
	springEarly := c.slot(p, loc, at("2027-03-28 00:30"), 30)          // 00:30 GMT
	springMorning := c.slot(p, loc, at("2027-03-28 11:30"), 30)        // 10:30 UTC
	springNoon := c.slot(p, loc, at("2027-03-28 12:00"), 30)           // 11:00 UTC: afternoon on the wall clock
	c.slot(p, loc, time.Date(2027, 3, 28, 23, 30, 0, 0, time.UTC), 30) // 00:30 BST on the 29th
	// 31 October 2027: 02:00 BST becomes 01:00 GMT; 01:30 happens twice.
	autumnEve := c.slot(p, loc, time.Date(2027, 10, 30, 23, 30, 0, 0, time.UTC), 30)     // 00:30 BST on the 31st
	firstHalfPast := c.slot(p, loc, time.Date(2027, 10, 31, 0, 30, 0, 0, time.UTC), 30)  // 01:30 BST
	secondHalfPast := c.slot(p, loc, time.Date(2027, 10, 31, 1, 30, 0, 0, time.UTC), 30) // 01:30 GMT
	autumnEvening := c.slot(p, loc, at("2027-10-31 17:00"), 30)
	c.slot(p, loc, time.Date(2027, 10, 30, 22, 30, 0, 0, time.UTC), 30) // 23:30 BST on the 30th

	_, o := c.find(map[string]any{"location_id": loc.String(), "date": "2027-03-28", "limit": 20})
	wantSlots(t, "28 March", o, springEarly, springMorning, springNoon)
	for _, s := range o.Slots {
		if s.ID == springMorning.String() && s.StartsAtLocal != "2027-03-28T11:30:00+01:00" {
			t.Errorf("after the change: %+v", s)
		}
		if s.ID == springEarly.String() && s.StartsAtLocal != "2027-03-28T00:30:00Z" && s.StartsAtLocal != "2027-03-28T00:30:00+00:00" {
			t.Errorf("before the change: %+v", s)
		}
	}
	_, o = c.find(map[string]any{"location_id": loc.String(), "date": "2027-03-28", "part_of_day": "morning"})
	wantSlots(t, "28 March, morning", o, springEarly, springMorning)
	_, o = c.find(map[string]any{"location_id": loc.String(), "date": "2027-03-28", "part_of_day": "afternoon"})
	wantSlots(t, "28 March, afternoon", o, springNoon)
	_, o = c.find(map[string]any{"location_id": loc.String(), "date": "2027-10-31", "limit": 20})
	wantSlots(t, "31 October", o, autumnEve, firstHalfPast, secondHalfPast, autumnEvening)
	_, o = c.find(map[string]any{"location_id": loc.String(), "date": "2027-10-31", "part_of_day": "evening"})
	wantSlots(t, "31 October, evening", o, autumnEvening)
	if len(o.Slots) == 1 && o.Slots[0].StartsAtLocal != "2027-10-31T17:00:00Z" && o.Slots[0].StartsAtLocal != "2027-10-31T17:00:00+00:00" {
		t.Errorf("after the autumn change: %+v", o.Slots[0])
	}
	q := url.Values{"location_id": {loc.String()}, "date": {"2027-10-31"}, "part_of_day": {"morning"}}
	r := e.Get("/v1/slots?"+q.Encode(), c.key)
	if r.Status != http.StatusOK || strings.Count(string(r.Body), `"id"`) != 3 {
		t.Errorf("GET /v1/slots on 31 October, morning: %d %s", r.Status, r.Body)
	}
}
