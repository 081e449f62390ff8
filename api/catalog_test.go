package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// created posts a catalog write and returns the new record's id.
func created(t *testing.T, e *apptest.Env, path, key, idemKey string, body any) (string, apptest.Response) {
	t.Helper()
	r := e.Post(path, key, idemKey, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, r.Status, r.Body)
	}
	res, _ := r.JSON(t)["result"].(map[string]any)
	id, _ := res["id"].(string)
	if id == "" {
		t.Fatalf("POST %s: no id in %s", path, r.Body)
	}
	return id, r
}

// rejected checks a 422 answer with its code.
func rejected(t *testing.T, r apptest.Response, code string) map[string]any {
	t.Helper()
	m := r.JSON(t)
	if r.Status != http.StatusUnprocessableEntity || m["code"] != code {
		t.Fatalf("want 422 %s, got %d %s", code, r.Status, r.Body)
	}
	details, _ := m["details"].(map[string]any)
	return details
}

// badInput checks a 400 naming field.
func badInput(t *testing.T, r apptest.Response, field string) {
	t.Helper()
	if m := r.JSON(t); r.Status != http.StatusBadRequest || m["field"] != field {
		t.Fatalf("want 400 naming %s, got %d %s", field, r.Status, r.Body)
	}
}

// TestCatalogIsCreatedOnceAndListed creates locations, services and a
// practitioner through REST, with replays, names taken in another case,
// unknown ids and bad input, and reads the rows and the listings.
func TestCatalogIsCreatedOnceAndListed(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tn, key := zonedTenant(t, e, "chain", "", "America/New_York")
	other, otherKey := e.Tenant("other")

	// A location takes the tenant's zone unless it names one.
	downtown, first := created(t, e, "/v1/locations", key, "loc-downtown", map[string]any{"name": " Downtown ", "address": "1 Main Street"})
	if res := first.JSON(t)["result"].(map[string]any); res["timezone"] != "America/New_York" || res["name"] != "Downtown" || res["address"] != "1 Main Street" {
		t.Fatalf("location: %s", first.Body)
	}
	again := e.Post("/v1/locations", key, "loc-downtown", map[string]any{"name": "Downtown", "address": "1 Main Street"})
	if again.Status != http.StatusCreated || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("replay: %d %s", again.Status, again.Body)
	}
	if r := e.Post("/v1/locations", key, "loc-downtown", map[string]any{"name": "Downtown", "address": "2 Main Street"}); r.Status != http.StatusUnprocessableEntity ||
		r.JSON(t)["code"] != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("changed input under the key: %d %s", r.Status, r.Body)
	}
	lakeside, _ := created(t, e, "/v1/locations", key, "loc-lakeside", map[string]any{"name": "Lakeside", "timezone": "Europe/London"})
	// A name taken in another case is a rejection naming the location that has it.
	details := rejected(t, e.Post("/v1/locations", key, "loc-downtown-2", map[string]any{"name": "DOWNTOWN", "timezone": "Europe/Paris"}), "LOCATION_EXISTS")
	if details["location_id"] != downtown {
		t.Fatalf("taken name details: %v", details)
	}
	badInput(t, e.Post("/v1/locations", key, "loc-bad", map[string]any{"name": "Mars", "timezone": "Mars/Olympus"}), "timezone")
	badInput(t, e.Post("/v1/locations", key, "loc-bad", map[string]any{"name": "  "}), "name")
	if n := e.Count("SELECT count(*) FROM locations WHERE tenant_id = $1", tn.ID); n != 2 {
		t.Fatalf("locations = %d, want 2", n)
	}

	cleaning, _ := created(t, e, "/v1/services", key, "svc-cleaning", map[string]any{"name": "Cleaning", "duration_minutes": 30, "buffer_minutes": 10, "price_amount": 8000, "currency": "usd"})
	checkup, _ := created(t, e, "/v1/services", key, "svc-checkup", map[string]any{"name": "Check-up", "duration_minutes": 45})
	if n := e.Count("SELECT count(*) FROM services WHERE tenant_id = $1 AND name = 'Cleaning' AND duration_minutes = 30 AND buffer_minutes = 10 AND price_amount = 8000 AND currency = 'usd'", tn.ID); n != 1 {
		t.Fatalf("cleaning row: %d", n)
	}
	if n := e.Count("SELECT count(*) FROM services WHERE tenant_id = $1 AND name = 'Check-up' AND buffer_minutes = 0 AND price_amount IS NULL AND currency IS NULL", tn.ID); n != 1 {
		t.Fatalf("check-up row: %d", n)
	}
	rejected(t, e.Post("/v1/services", key, "svc-cleaning-2", map[string]any{"name": "cleaning", "duration_minutes": 60}), "SERVICE_EXISTS")
	badInput(t, e.Post("/v1/services", key, "svc-bad", map[string]any{"name": "Quick", "duration_minutes": 3}), "duration_minutes")
	badInput(t, e.Post("/v1/services", key, "svc-bad", map[string]any{"name": "Quick", "duration_minutes": 30, "currency": "USD"}), "currency")
	badInput(t, e.Post("/v1/services", key, "svc-bad", map[string]any{"name": "Quick", "duration_minutes": 30, "price_amount": 100, "currency": "XYZ"}), "currency")
	badInput(t, e.Post("/v1/services", key, "svc-bad", map[string]any{"name": "Quick", "duration_minutes": 30, "buffer_minutes": 241}), "buffer_minutes")

	// A practitioner with an unknown location, or another tenant's, is
	// rejected and nothing is created.
	foreign, _ := created(t, e, "/v1/locations", otherKey, "loc-foreign", map[string]any{"name": "Elsewhere", "timezone": "UTC"})
	missing := uuid.NewString()
	details = rejected(t, e.Post("/v1/practitioners", key, "pr-bad", map[string]any{"name": "Dr. Ortiz", "location_ids": []string{downtown, foreign, missing}}), "LOCATION_NOT_FOUND")
	if got := fmt.Sprint(details["location_ids"]); !strings.Contains(got, foreign) || !strings.Contains(got, missing) || strings.Contains(got, downtown) {
		t.Fatalf("missing locations: %v", details)
	}
	rejected(t, e.Post("/v1/practitioners", key, "pr-bad-2", map[string]any{"name": "Dr. Ortiz", "location_ids": []string{downtown}, "service_ids": []string{missing}}), "SERVICE_NOT_FOUND")
	badInput(t, e.Post("/v1/practitioners", key, "pr-bad-3", map[string]any{"name": "Dr. Ortiz", "location_ids": []string{}}), "location_ids")
	badInput(t, e.Post("/v1/practitioners", key, "pr-bad-3", map[string]any{"name": "Dr. Ortiz", "location_ids": []string{"downtown"}}), "location_ids[0]")
	if n := e.Count("SELECT count(*) FROM practitioners") + e.Count("SELECT count(*) FROM practitioner_locations") + e.Count("SELECT count(*) FROM practitioner_services"); n != 0 {
		t.Fatalf("rejected practitioners wrote %d rows", n)
	}
	// The same sets in another order, with a repeat, are one input.
	ortiz, _ := created(t, e, "/v1/practitioners", key, "pr-ortiz", map[string]any{"name": "Dr. Ortiz", "location_ids": []string{lakeside, downtown}, "service_ids": []string{cleaning, checkup}})
	if r := e.Post("/v1/practitioners", key, "pr-ortiz", map[string]any{"name": "Dr. Ortiz", "location_ids": []string{downtown, lakeside, downtown}, "service_ids": []string{checkup, cleaning}}); !r.Replayed() {
		t.Fatalf("the same sets in another order: %d %s", r.Status, r.Body)
	}
	lee, _ := created(t, e, "/v1/practitioners", key, "pr-lee", map[string]any{"name": "Dr. Lee", "location_ids": []string{downtown}, "service_ids": []string{cleaning}})
	rejected(t, e.Post("/v1/practitioners", key, "pr-lee-2", map[string]any{"name": "dr. lee", "location_ids": []string{lakeside}}), "PRACTITIONER_EXISTS")
	if n := e.Count("SELECT count(*) FROM practitioner_locations WHERE practitioner_id = $1", ortiz); n != 2 {
		t.Fatalf("Ortiz works at %d locations, want 2", n)
	}
	if n := e.Count("SELECT count(*) FROM practitioner_services WHERE practitioner_id = $1", ortiz); n != 2 {
		t.Fatalf("Ortiz performs %d services, want 2", n)
	}

	var locs struct {
		Locations []struct{ ID, Name, Timezone string } `json:"locations"`
	}
	listed(t, e, "/v1/locations", key, &locs)
	if len(locs.Locations) != 2 || locs.Locations[0].ID != downtown || locs.Locations[1].Timezone != "Europe/London" {
		t.Fatalf("locations: %+v", locs)
	}
	var svcs struct {
		Services []struct {
			ID          string  `json:"id"`
			Name        string  `json:"name"`
			PriceAmount *int64  `json:"price_amount"`
			Currency    *string `json:"currency"`
		} `json:"services"`
	}
	listed(t, e, "/v1/services", key, &svcs)
	if len(svcs.Services) != 2 || svcs.Services[0].Name != "Check-up" || svcs.Services[0].PriceAmount != nil ||
		*svcs.Services[1].PriceAmount != 8000 || *svcs.Services[1].Currency != "USD" {
		t.Fatalf("services: %+v", svcs)
	}
	listed(t, e, "/v1/services?practitioner_id="+lee, key, &svcs)
	if len(svcs.Services) != 1 || svcs.Services[0].ID != cleaning {
		t.Fatalf("Dr. Lee's services: %+v", svcs)
	}
	listed(t, e, "/v1/services?location_id="+lakeside, key, &svcs)
	if len(svcs.Services) != 2 {
		t.Fatalf("services at Lakeside: %+v", svcs)
	}
	var prs struct {
		Practitioners []struct {
			ID          string   `json:"id"`
			Name        string   `json:"name"`
			LocationIDs []string `json:"location_ids"`
			ServiceIDs  []string `json:"service_ids"`
		} `json:"practitioners"`
	}
	listed(t, e, "/v1/practitioners", key, &prs)
	if len(prs.Practitioners) != 2 || prs.Practitioners[0].ID != lee || len(prs.Practitioners[1].LocationIDs) != 2 || len(prs.Practitioners[0].ServiceIDs) != 1 {
		t.Fatalf("practitioners: %+v", prs)
	}
	listed(t, e, "/v1/practitioners?location_id="+lakeside, key, &prs)
	if len(prs.Practitioners) != 1 || prs.Practitioners[0].ID != ortiz {
		t.Fatalf("practitioners at Lakeside: %+v", prs)
	}
	listed(t, e, "/v1/practitioners?service_id="+checkup, key, &prs)
	if len(prs.Practitioners) != 1 || prs.Practitioners[0].ID != ortiz {
		t.Fatalf("check-up practitioners: %+v", prs)
	}
	badInput(t, e.Get("/v1/practitioners?service_id=cleaning", key), "service_id")
	badInput(t, e.Get("/v1/services?service_id="+cleaning, key), "service_id")
	// Another tenant sees none of it, even by id.
	listed(t, e, "/v1/practitioners?location_id="+downtown, otherKey, &prs)
	listed(t, e, "/v1/services", otherKey, &svcs)
	if len(prs.Practitioners) != 0 || len(svcs.Services) != 0 {
		t.Fatalf("another tenant: %+v %+v", prs, svcs)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", other.ID); n != 1 {
		t.Fatalf("the other tenant's actions = %d, want 1", n)
	}
}

func listed(t *testing.T, e *apptest.Env, path, key string, v any) {
	t.Helper()
	r := e.Get(path, key)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// clinic is a tenant with Dr. Ortiz working at Downtown (New York) and
// Lakeside (London), and Dr. Lee at Downtown only.
type clinic struct {
	*apptest.Env
	tenant                        uuid.UUID
	key                           string
	downtown, lakeside            string
	ortiz, lee, cleaning, checkup string
}

func setupClinic(t *testing.T) clinic {
	t.Helper()
	e := apptest.Start(t)
	tn, key := zonedTenant(t, e, "clinic", testOrg, "UTC")
	c := clinic{Env: e, tenant: tn.ID, key: key}
	c.downtown, _ = created(t, e, "/v1/locations", key, "downtown", map[string]any{"name": "Downtown", "timezone": "America/New_York", "address": "1 Main Street"})
	c.lakeside, _ = created(t, e, "/v1/locations", key, "lakeside", map[string]any{"name": "Lakeside", "timezone": "Europe/London"})
	c.cleaning, _ = created(t, e, "/v1/services", key, "cleaning", map[string]any{"name": "Cleaning", "duration_minutes": 30, "price_amount": 8000, "currency": "USD"})
	c.checkup, _ = created(t, e, "/v1/services", key, "checkup", map[string]any{"name": "Check-up", "duration_minutes": 45})
	c.ortiz, _ = created(t, e, "/v1/practitioners", key, "ortiz", map[string]any{"name": "Dr. Ortiz", "location_ids": []string{c.downtown, c.lakeside}, "service_ids": []string{c.cleaning, c.checkup}})
	c.lee, _ = created(t, e, "/v1/practitioners", key, "lee", map[string]any{"name": "Dr. Lee", "location_ids": []string{c.downtown}, "service_ids": []string{c.cleaning}})
	return c
}

// practitionerSlots lists a practitioner's slots between two instants as
// UTC start/length@location.
func (c clinic) practitionerSlots(t *testing.T, practitioner string, from, to time.Time) []string {
	t.Helper()
	rows, err := c.Store.Pool().Query(t.Context(), `SELECT s.starts_at, s.ends_at, l.name, s.resource FROM slots s JOIN locations l ON l.id = s.location_id
		WHERE s.tenant_id = $1 AND s.practitioner_id = $2 AND s.starts_at >= $3 AND s.starts_at < $4 ORDER BY s.starts_at`, c.tenant, practitioner, from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var start, end time.Time
		var place, resource string
		if err := rows.Scan(&start, &end, &place, &resource); err != nil {
			t.Fatal(err)
		}
		out = append(out, start.UTC().Format("2006-01-02T15:04")+"/"+end.Sub(start).String()+"@"+place)
	}
	return out
}

// noOverlappingSlots checks the rule of the model: one practitioner's
// slots never overlap, at whichever location.
func noOverlappingSlots(t *testing.T, e *apptest.Env) {
	t.Helper()
	if n := e.Count(`SELECT count(*) FROM slots a JOIN slots b ON a.practitioner_id = b.practitioner_id AND a.id < b.id
		AND a.starts_at < b.ends_at AND b.starts_at < a.ends_at`); n != 0 {
		t.Fatalf("%d pairs of a practitioner's slots overlap", n)
	}
}

type practitionerScheduled struct {
	scheduled
	PractitionerID     string `json:"practitioner_id"`
	LocationID         string `json:"location_id"`
	SkippedOverlapping *int   `json:"skipped_overlapping"`
}

func (c clinic) schedule(t *testing.T, idemKey string, body map[string]any) practitionerScheduled {
	t.Helper()
	r := c.Post("/v1/slots/schedule", c.key, idemKey, body)
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("schedule: %d %s", r.Status, r.Body)
	}
	var env struct {
		Result practitionerScheduled `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatal(err)
	}
	return env.Result
}

// TestPractitionerSchedulesAtTwoLocationsInTwoZones: Dr. Ortiz's weekly
// hours at Downtown are read in New York's zone and at Lakeside in
// London's (the location's zone is the default); hours at Lakeside that
// fall on hours at Downtown are skipped and counted.
func TestPractitionerSchedulesAtTwoLocationsInTwoZones(t *testing.T) {
	t.Parallel()
	c := setupClinic(t)
	// Monday 7 to Wednesday 9 January 2030: New York is UTC-5, London UTC+0.
	ny := c.schedule(t, "ortiz-downtown", map[string]any{
		"practitioner_id": c.ortiz, "location_id": c.downtown, "slot_minutes": 60, "from": "2030-01-07", "to": "2030-01-09",
		"hours": []map[string]string{{"weekday": "mon", "start": "09:00", "end": "12:00"}, {"weekday": "tue", "start": "09:00", "end": "12:00"}},
	})
	if ny.Created != 6 || ny.Timezone != "America/New_York" || ny.Resource != "Dr. Ortiz" || ny.PractitionerID != c.ortiz || ny.LocationID != c.downtown ||
		ny.SkippedOverlapping == nil || *ny.SkippedOverlapping != 0 {
		t.Fatalf("Downtown: %+v", ny)
	}
	// Monday 13:00-17:00 in London is 08:00-12:00 in New York: the hours
	// 14:00-17:00 London are Downtown's 09:00-12:00.
	london := c.schedule(t, "ortiz-lakeside", map[string]any{
		"practitioner_id": c.ortiz, "location_id": c.lakeside, "slot_minutes": 60, "from": "2030-01-07", "to": "2030-01-09",
		"hours": []map[string]string{{"weekday": "mon", "start": "13:00", "end": "17:00"}, {"weekday": "wed", "start": "13:00", "end": "17:00"}},
	})
	if london.Created != 5 || london.Timezone != "Europe/London" || london.SkippedOverlapping == nil || *london.SkippedOverlapping != 3 ||
		london.Skipped != 3 || london.SkippedExisting != 0 {
		t.Fatalf("Lakeside: %+v", london)
	}
	from := utcTime("2030-01-07T00:00:00Z")
	want := []string{
		"2030-01-07T13:00/1h0m0s@Lakeside", "2030-01-07T14:00/1h0m0s@Downtown", "2030-01-07T15:00/1h0m0s@Downtown", "2030-01-07T16:00/1h0m0s@Downtown",
		"2030-01-08T14:00/1h0m0s@Downtown", "2030-01-08T15:00/1h0m0s@Downtown", "2030-01-08T16:00/1h0m0s@Downtown",
		"2030-01-09T13:00/1h0m0s@Lakeside", "2030-01-09T14:00/1h0m0s@Lakeside", "2030-01-09T15:00/1h0m0s@Lakeside", "2030-01-09T16:00/1h0m0s@Lakeside",
	}
	if got := c.practitionerSlots(t, c.ortiz, from, from.Add(7*24*time.Hour)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Ortiz's slots\n got %v\nwant %v", got, want)
	}
	// Applied again: the times are there already.
	again := c.schedule(t, "ortiz-downtown-again", map[string]any{
		"practitioner_id": c.ortiz, "location_id": c.downtown, "slot_minutes": 60, "from": "2030-01-07", "to": "2030-01-09",
		"hours": []map[string]string{{"weekday": "mon", "start": "09:00", "end": "12:00"}, {"weekday": "tue", "start": "09:00", "end": "12:00"}},
	})
	if again.Created != 0 || again.SkippedExisting != 6 || *again.SkippedOverlapping != 0 {
		t.Fatalf("again: %+v", again)
	}
	// Dr. Lee's hours at the same time are another calendar.
	lee := c.schedule(t, "lee-downtown", map[string]any{
		"practitioner_id": c.lee, "location_id": c.downtown, "slot_minutes": 60, "from": "2030-01-07", "to": "2030-01-07",
		"hours": []map[string]string{{"weekday": "mon", "start": "09:00", "end": "12:00"}},
	})
	if lee.Created != 3 || lee.Resource != "Dr. Lee" {
		t.Fatalf("Dr. Lee: %+v", lee)
	}
	// Dr. Lee does not work at Lakeside: rejected, nothing created.
	r := c.Post("/v1/slots/schedule", c.key, "lee-lakeside", map[string]any{
		"practitioner_id": c.lee, "location_id": c.lakeside, "slot_minutes": 60, "from": "2030-01-07", "to": "2030-01-07",
		"hours": []map[string]string{{"weekday": "mon", "start": "09:00", "end": "12:00"}},
	})
	rejected(t, r, "PRACTITIONER_NOT_AT_LOCATION")
	if n := c.Count("SELECT count(*) FROM slots WHERE location_id = $1 AND practitioner_id = $2", c.lakeside, c.lee); n != 0 {
		t.Fatalf("Dr. Lee has %d slots at Lakeside", n)
	}
	noOverlappingSlots(t, c.Env)
}

// TestPractitionerScheduleOnTheDayTheClocksGoForward: the location's zone
// (New York, clocks forward on Sunday 10 March 2030 at 02:00), not the
// tenant's (UTC), cuts the night's hours.
func TestPractitionerScheduleOnTheDayTheClocksGoForward(t *testing.T) {
	t.Parallel()
	c := setupClinic(t)
	res := c.schedule(t, "ortiz-dst", map[string]any{
		"practitioner_id": c.ortiz, "location_id": c.downtown, "slot_minutes": 60, "from": "2030-03-09", "to": "2030-03-11",
		"hours": []map[string]string{
			{"weekday": "sat", "start": "09:00", "end": "11:00"}, {"weekday": "sun", "start": "00:00", "end": "04:00"},
			{"weekday": "mon", "start": "09:00", "end": "11:00"},
		},
	})
	if res.Created != 7 || res.Timezone != "America/New_York" {
		t.Fatalf("schedule: %+v", res)
	}
	from := utcTime("2030-03-09T00:00:00Z")
	want := []string{
		// Saturday, EST: 09:00 is 14:00 UTC.
		"2030-03-09T14:00/1h0m0s@Downtown", "2030-03-09T15:00/1h0m0s@Downtown",
		// Sunday night: 00:00 and 01:00 EST, then 03:00 EDT; 02:00 never shows.
		"2030-03-10T05:00/1h0m0s@Downtown", "2030-03-10T06:00/1h0m0s@Downtown", "2030-03-10T07:00/1h0m0s@Downtown",
		// Monday, EDT: 09:00 is 13:00 UTC.
		"2030-03-11T13:00/1h0m0s@Downtown", "2030-03-11T14:00/1h0m0s@Downtown",
	}
	if got := c.practitionerSlots(t, c.ortiz, from, from.Add(4*24*time.Hour)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slots\n got %v\nwant %v", got, want)
	}
}

// TestPractitionerSlotsNeverOverlapUnderConcurrentSchedules applies
// schedules of one practitioner at two locations at the same time, each
// twice under its own key: the practitioner's lock lets no two of them
// find the same time free.
func TestPractitionerSlotsNeverOverlapUnderConcurrentSchedules(t *testing.T) {
	t.Parallel()
	c := setupClinic(t)
	weekdays := func(start, end string) []map[string]string {
		var out []map[string]string
		for _, d := range []string{"mon", "tue", "wed", "thu", "fri"} {
			out = append(out, map[string]string{"weekday": d, "start": start, "end": end})
		}
		return out
	}
	bodies := []map[string]any{{
		// 09:00-13:00 New York in 30-minute slots: 14:00-18:00 UTC.
		"practitioner_id": c.ortiz, "location_id": c.downtown, "slot_minutes": 30, "from": "2030-01-07", "to": "2030-01-11",
		"hours": weekdays("09:00", "13:00"),
	}, {
		// 15:00-19:00 London in 45-minute slots: overlaps every afternoon.
		"practitioner_id": c.ortiz, "location_id": c.lakeside, "slot_minutes": 45, "from": "2030-01-07", "to": "2030-01-11",
		"hours": weekdays("15:00", "19:00"),
	}}
	var wg sync.WaitGroup
	results := make([]practitionerScheduled, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := bodies[i%2]
			r := c.Post("/v1/slots/schedule", c.key, fmt.Sprintf("concurrent-%d", i), body)
			if r.Status != http.StatusCreated && r.Status != http.StatusOK {
				t.Errorf("schedule %d: %d %s", i, r.Status, r.Body)
				return
			}
			var env struct {
				Result practitionerScheduled `json:"result"`
			}
			if err := json.Unmarshal(r.Body, &env); err != nil {
				t.Error(err)
			}
			results[i] = env.Result
		}()
	}
	wg.Wait()
	noOverlappingSlots(t, c.Env)
	created := 0
	for i, r := range results {
		created += r.Created
		// Every time of the schedule is accounted for.
		if want := []int{40, 25}[i%2]; r.Created+r.Skipped != want || r.SkippedOverlapping == nil {
			t.Errorf("schedule %d: %+v, want %d times", i, r, want)
		}
	}
	if n := c.Count("SELECT count(*) FROM slots WHERE practitioner_id = $1", c.ortiz); n != created || n == 0 {
		t.Fatalf("slots = %d, results say %d created", n, created)
	}
}

// TestPractitionerSlotCreate: slot.create with a practitioner and a
// location, and what it refuses.
func TestPractitionerSlotCreate(t *testing.T) {
	t.Parallel()
	c := setupClinic(t)
	body := map[string]any{"starts_at": "2030-01-07T14:00:00Z", "ends_at": "2030-01-07T15:00:00Z", "practitioner_id": c.ortiz, "location_id": c.downtown}
	slot, first := created(t, c.Env, "/v1/slots", c.key, "slot-1", body)
	// The answer names whose slot it is and where, as GET /v1/slots does.
	if res := first.JSON(t)["result"].(map[string]any); res["resource"] != "Dr. Ortiz" || res["practitioner_id"] != c.ortiz || res["location_id"] != c.downtown {
		t.Fatalf("slot: %s", first.Body)
	}
	if again := c.Post("/v1/slots", c.key, "slot-1", body); again.Status != http.StatusCreated || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("replay: %d %s, want the first answer %s", again.Status, again.Body, first.Body)
	}
	if n := c.Count("SELECT count(*) FROM slots WHERE id = $1 AND practitioner_id = $2 AND location_id = $3", slot, c.ortiz, c.downtown); n != 1 {
		t.Fatalf("slot row: %d", n)
	}
	// Half an hour later at Lakeside overlaps it.
	details := rejected(t, c.Post("/v1/slots", c.key, "slot-2", map[string]any{
		"starts_at": "2030-01-07T14:30:00Z", "ends_at": "2030-01-07T15:30:00Z", "practitioner_id": c.ortiz, "location_id": c.lakeside,
	}), "SLOT_OVERLAPS")
	if fmt.Sprint(details["slot_ids"]) != fmt.Sprint([]any{slot}) {
		t.Fatalf("overlap details: %v", details)
	}
	// Right after it is free; Dr. Lee at the same time is another calendar.
	created(t, c.Env, "/v1/slots", c.key, "slot-3", map[string]any{"starts_at": "2030-01-07T15:00:00Z", "ends_at": "2030-01-07T16:00:00Z", "practitioner_id": c.ortiz, "location_id": c.lakeside})
	created(t, c.Env, "/v1/slots", c.key, "slot-4", map[string]any{"starts_at": "2030-01-07T14:00:00Z", "ends_at": "2030-01-07T15:00:00Z", "practitioner_id": c.lee, "location_id": c.downtown})
	rejected(t, c.Post("/v1/slots", c.key, "slot-5", map[string]any{"starts_at": "2030-01-08T14:00:00Z", "ends_at": "2030-01-08T15:00:00Z", "practitioner_id": c.lee, "location_id": c.lakeside}), "PRACTITIONER_NOT_AT_LOCATION")
	rejected(t, c.Post("/v1/slots", c.key, "slot-6", map[string]any{"starts_at": "2030-01-08T14:00:00Z", "ends_at": "2030-01-08T15:00:00Z", "practitioner_id": uuid.NewString(), "location_id": c.lakeside}), "PRACTITIONER_NOT_FOUND")
	rejected(t, c.Post("/v1/slots", c.key, "slot-7", map[string]any{"starts_at": "2030-01-08T14:00:00Z", "ends_at": "2030-01-08T15:00:00Z", "practitioner_id": c.lee, "location_id": uuid.NewString()}), "LOCATION_NOT_FOUND")
	badInput(t, c.Post("/v1/slots", c.key, "slot-8", map[string]any{"starts_at": "2030-01-08T14:00:00Z", "ends_at": "2030-01-08T15:00:00Z", "practitioner_id": c.lee}), "location_id")
	badInput(t, c.Post("/v1/slots", c.key, "slot-8", map[string]any{"starts_at": "2030-01-08T14:00:00Z", "ends_at": "2030-01-08T15:00:00Z", "location_id": c.downtown}), "practitioner_id")
	badInput(t, c.Post("/v1/slots", c.key, "slot-8", map[string]any{"starts_at": "2030-01-08T14:00:00Z", "ends_at": "2030-01-08T15:00:00Z", "practitioner_id": c.lee, "location_id": c.downtown, "resource": "Chair 2"}), "resource")
	if n := c.Count("SELECT count(*) FROM slots WHERE tenant_id = $1", c.tenant); n != 3 {
		t.Fatalf("slots = %d, want 3", n)
	}
	noOverlappingSlots(t, c.Env)
	// A slot without a practitioner is the single calendar, as before: it
	// may overlap anything.
	_, single := created(t, c.Env, "/v1/slots", c.key, "slot-9", map[string]any{"starts_at": "2030-01-07T14:00:00Z", "ends_at": "2030-01-07T15:00:00Z"})
	res := single.JSON(t)["result"].(map[string]any)
	if _, ok := res["practitioner_id"]; ok {
		t.Fatalf("single calendar slot: %s", single.Body)
	}
	if _, ok := res["location_id"]; ok {
		t.Fatalf("single calendar slot: %s", single.Body)
	}
}

// TestDashaListsServicesAndPractitioners: the read tools answer with a
// summary an agent can say, claim nothing and see only the tenant's catalog.
func TestDashaListsServicesAndPractitioners(t *testing.T) {
	t.Parallel()
	c := setupClinic(t)
	ask := func(tool string, args map[string]any) answer {
		t.Helper()
		return decodeAnswer(t, c.Post("/v1/dasha/tools/"+tool, c.key, "", payload(tool, "call_catalog", args)))
	}
	var services struct {
		Services []struct {
			ServiceID       string `json:"service_id"`
			Name            string `json:"name"`
			DurationMinutes int    `json:"duration_minutes"`
			Price           string `json:"price"`
		} `json:"services"`
		Summary string `json:"summary"`
		HasMore bool   `json:"has_more"`
	}
	a := ask("list_services", nil)
	decodeDetails(t, a, &services)
	if a.Outcome != "confirmed" || a.ActionID != "" || services.Summary != "We offer Check-up, 45 minutes, and Cleaning, 30 minutes, 80 US dollars." ||
		len(services.Services) != 2 || services.Services[1].ServiceID != c.cleaning || services.Services[1].Price != "80 US dollars" || services.HasMore {
		t.Fatalf("list_services: %+v %s", a, a.Details)
	}
	a = ask("list_services", map[string]any{"practitioner_id": c.lee})
	decodeDetails(t, a, &services)
	if services.Summary != "We offer Cleaning, 30 minutes, 80 US dollars." {
		t.Fatalf("Dr. Lee's services: %s", a.Details)
	}
	var practitioners struct {
		Practitioners []struct {
			PractitionerID string `json:"practitioner_id"`
			Name           string `json:"name"`
			Locations      []struct {
				LocationID string `json:"location_id"`
				Timezone   string `json:"timezone"`
			} `json:"locations"`
		} `json:"practitioners"`
		Summary string `json:"summary"`
	}
	a = ask("list_practitioners", map[string]any{})
	decodeDetails(t, a, &practitioners)
	if a.Outcome != "confirmed" || practitioners.Summary != "Dr. Lee: Cleaning, at Downtown. Dr. Ortiz: Check-up and Cleaning, at Downtown and Lakeside." ||
		len(practitioners.Practitioners) != 2 || practitioners.Practitioners[1].PractitionerID != c.ortiz ||
		practitioners.Practitioners[1].Locations[1].Timezone != "Europe/London" {
		t.Fatalf("list_practitioners: %+v %s", a, a.Details)
	}
	a = ask("list_practitioners", map[string]any{"service_id": c.checkup, "location_id": c.downtown})
	decodeDetails(t, a, &practitioners)
	if len(practitioners.Practitioners) != 1 || practitioners.Practitioners[0].Name != "Dr. Ortiz" {
		t.Fatalf("check-up at Downtown: %s", a.Details)
	}
	// An id the tenant does not have lists nobody; a malformed one is named.
	a = ask("list_practitioners", map[string]any{"service_id": uuid.NewString()})
	decodeDetails(t, a, &practitioners)
	if a.Outcome != "confirmed" || len(practitioners.Practitioners) != 0 || !strings.Contains(a.Say, "Nobody matches") {
		t.Fatalf("unknown service: %+v", a)
	}
	if a = ask("list_services", map[string]any{"location_id": "downtown"}); a.Outcome != "rejected" || a.Reason != "invalid_arguments" {
		t.Fatalf("malformed id: %+v", a)
	}
	// The other voice platforms get the same tools and answers.
	a = decodeAnswer(t, c.Post("/v1/elevenlabs/tools/list_services", c.key, "", map[string]any{
		"practitioner_id": c.lee, "system__conversation_id": "conv_catalog", "system__agent_id": "agent_01jx",
	}))
	decodeDetails(t, a, &services)
	if a.Outcome != "confirmed" || services.Summary != "We offer Cleaning, 30 minutes, 80 US dollars." {
		t.Fatalf("ElevenLabs list_services: %+v", a)
	}
	a = decodeAnswer(t, c.Post("/v1/retell/functions/list_practitioners", c.key, "", map[string]any{
		"name": "list_practitioners", "call": map[string]any{"call_id": "call_catalog", "call_type": "phone_call"},
		"args": map[string]any{"location_id": c.lakeside},
	}))
	decodeDetails(t, a, &practitioners)
	if a.Outcome != "confirmed" || practitioners.Summary != "Dr. Ortiz: Check-up and Cleaning, at Downtown and Lakeside." {
		t.Fatalf("Retell list_practitioners: %+v", a)
	}
	if n := c.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND operation NOT IN ('location.create', 'service.create', 'practitioner.create')", c.tenant); n != 0 {
		t.Fatalf("the reads claimed %d actions", n)
	}
}

// TestConcurrentPractitionersOfOneName: two keys create a practitioner of
// the same name (in another case) at once: one is created, the other is
// rejected naming it, and one row is written.
func TestConcurrentPractitionersOfOneName(t *testing.T) {
	t.Parallel()
	c := setupClinic(t)
	var wg sync.WaitGroup
	answers := make([]apptest.Response, 4)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"Dr. Kay", "DR. KAY"}[i%2]
			answers[i] = c.Post("/v1/practitioners", c.key, fmt.Sprintf("kay-%d", i), map[string]any{"name": name, "location_ids": []string{c.downtown}})
		}()
	}
	wg.Wait()
	var kay string
	created := 0
	for _, r := range answers {
		if r.Status == http.StatusCreated {
			created++
			kay = r.JSON(t)["result"].(map[string]any)["id"].(string)
		}
	}
	if created != 1 {
		t.Fatalf("%d practitioners created, want 1", created)
	}
	for _, r := range answers {
		if r.Status != http.StatusCreated {
			if details := rejected(t, r, "PRACTITIONER_EXISTS"); details["practitioner_id"] != kay {
				t.Fatalf("rejection names %v, want %s", details, kay)
			}
		}
	}
	if n := c.Count("SELECT count(*) FROM practitioners WHERE lower(name) = 'dr. kay'") + c.Count("SELECT count(*) FROM practitioner_locations WHERE practitioner_id = $1", kay); n != 2 {
		t.Fatalf("rows = %d, want the practitioner and one link", n)
	}
}
