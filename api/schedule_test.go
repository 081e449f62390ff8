package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// zonedTenant creates a tenant in an IANA timezone, bound to a Dasha org
// when org is not empty, and returns it with its API key.
func zonedTenant(t *testing.T, e *apptest.Env, name, org, zone string) (oncecall.Tenant, string) {
	t.Helper()
	tn, key, err := e.Store.CreateTenantWith(t.Context(), db.NewTenant{Name: name, DashaOrgID: org, Timezone: zone})
	if err != nil {
		t.Fatal(err)
	}
	return tn, key
}

// weekdays9to5 are Monday to Friday, 09:00 to 17:00.
func weekdays9to5() []map[string]string {
	var hours []map[string]string
	for _, d := range []string{"mon", "tue", "wed", "thu", "fri"} {
		hours = append(hours, map[string]string{"weekday": d, "start": "09:00", "end": "17:00"})
	}
	return hours
}

type scheduled struct {
	Resource        string `json:"resource"`
	Timezone        string `json:"timezone"`
	Created         int    `json:"created"`
	Skipped         int    `json:"skipped"`
	SkippedExisting int    `json:"skipped_existing"`
	SkippedPast     int    `json:"skipped_past"`
}

func scheduleSlots(t *testing.T, e *apptest.Env, key, idemKey string, body map[string]any) (scheduled, apptest.Response) {
	t.Helper()
	r := e.Post("/v1/slots/schedule", key, idemKey, body)
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("schedule: %d %s", r.Status, r.Body)
	}
	var env struct {
		Operation string    `json:"operation"`
		Result    scheduled `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil || env.Operation != "slot.schedule" {
		t.Fatalf("schedule answer %s: %v", r.Body, err)
	}
	return env.Result, r
}

// starts lists the UTC starts of a resource's slots between two instants.
func slotStarts(t *testing.T, e *apptest.Env, tenant uuid.UUID, resource string, from, to time.Time) []string {
	t.Helper()
	rows, err := e.Store.Pool().Query(t.Context(), `SELECT starts_at, ends_at FROM slots
		WHERE tenant_id = $1 AND resource = $2 AND starts_at >= $3 AND starts_at < $4 ORDER BY starts_at`, tenant, resource, from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var start, end time.Time
		if err := rows.Scan(&start, &end); err != nil {
			t.Fatal(err)
		}
		out = append(out, start.UTC().Format("2006-01-02T15:04")+"/"+end.Sub(start).String())
	}
	return out
}

func noDuplicateSlots(t *testing.T, e *apptest.Env) {
	t.Helper()
	if n := e.Count(`SELECT count(*) FROM (SELECT 1 FROM slots GROUP BY tenant_id, resource, starts_at, ends_at HAVING count(*) > 1) d`); n != 0 {
		t.Fatalf("%d times have more than one slot", n)
	}
}

func utcTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestScheduleSlotsAcrossTheClocksGoingForward applies weekly hours in the
// tenant's zone (Europe/London) over the week the clocks go forward, then
// again over an overlapping range, and reads the rows.
func TestScheduleSlotsAcrossTheClocksGoingForward(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tn, key := zonedTenant(t, e, "clinic", "", "Europe/London")
	// Sunday 31 March 2030: 01:00 GMT becomes 02:00 BST.
	hours := append(weekdays9to5(), map[string]string{"weekday": "sun", "start": "00:00", "end": "04:00"})
	body := map[string]any{"resource": "Dr. Lee", "hours": hours, "slot_minutes": 60, "from": "2030-03-25", "to": "2030-04-01"}
	res, first := scheduleSlots(t, e, key, "schedule-spring", body)
	// Six weekdays of 8 slots, and a Sunday night that has only three hours.
	if first.Status != http.StatusCreated || res.Created != 51 || res.Skipped != 0 || res.Timezone != "Europe/London" || res.Resource != "Dr. Lee" {
		t.Fatalf("first schedule: %d %+v", first.Status, res)
	}
	if n := e.Count("SELECT count(*) FROM slots WHERE tenant_id = $1 AND resource = 'Dr. Lee'", tn.ID); n != 51 {
		t.Fatalf("slots = %d, want 51", n)
	}
	for day, want := range map[string][]string{
		// Friday before the change: 09:00 GMT is 09:00 UTC.
		"2030-03-29": {"2030-03-29T09:00/1h0m0s", "2030-03-29T10:00/1h0m0s", "2030-03-29T11:00/1h0m0s", "2030-03-29T12:00/1h0m0s",
			"2030-03-29T13:00/1h0m0s", "2030-03-29T14:00/1h0m0s", "2030-03-29T15:00/1h0m0s", "2030-03-29T16:00/1h0m0s"},
		// The night of the change: 00:00 GMT, then 02:00 and 03:00 BST.
		"2030-03-31": {"2030-03-31T00:00/1h0m0s", "2030-03-31T01:00/1h0m0s", "2030-03-31T02:00/1h0m0s"},
		// Monday after: 09:00 BST is 08:00 UTC.
		"2030-04-01": {"2030-04-01T08:00/1h0m0s", "2030-04-01T09:00/1h0m0s", "2030-04-01T10:00/1h0m0s", "2030-04-01T11:00/1h0m0s",
			"2030-04-01T12:00/1h0m0s", "2030-04-01T13:00/1h0m0s", "2030-04-01T14:00/1h0m0s", "2030-04-01T15:00/1h0m0s"},
	} {
		from := utcTime(day + "T00:00:00Z")
		if got := slotStarts(t, e, tn.ID, "Dr. Lee", from, from.Add(24*time.Hour)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: slots %v, want %v", day, got, want)
		}
	}
	// A retry with the key replays the answer and creates nothing.
	_, replay := scheduleSlots(t, e, key, "schedule-spring", body)
	if !replay.Replayed() || !bytes.Equal(replay.Body, first.Body) {
		t.Fatalf("replay: %s", replay.Body)
	}
	// The same schedule over an overlapping range, under a new key: only
	// the days not scheduled yet get slots.
	body["from"], body["to"] = "2030-03-29", "2030-04-05"
	res, _ = scheduleSlots(t, e, key, "schedule-spring-2", body)
	if res.Created != 4*8 || res.SkippedExisting != 8+3+8 || res.Skipped != res.SkippedExisting || res.SkippedPast != 0 {
		t.Fatalf("overlapping schedule: %+v", res)
	}
	if n := e.Count("SELECT count(*) FROM slots WHERE tenant_id = $1", tn.ID); n != 51+32 {
		t.Fatalf("slots = %d, want %d", n, 51+32)
	}
	// Applied once more it creates nothing: 200, every slot skipped.
	res, again := scheduleSlots(t, e, key, "schedule-spring-3", body)
	if again.Status != http.StatusOK || res.Created != 0 || res.Skipped != 51 {
		t.Fatalf("a third time: %d %+v", again.Status, res)
	}
	noDuplicateSlots(t, e)
	// Another resource is another calendar.
	body["resource"] = "Dr. Kay"
	if res, _ := scheduleSlots(t, e, key, "schedule-kay", body); res.Created != 51 {
		t.Fatalf("another resource: %+v", res)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND operation = 'slot.schedule'", tn.ID); n != 4 {
		t.Fatalf("schedule actions = %d, want 4", n)
	}
}

// TestScheduleSlotsInTheNightTheClocksGoBack names the zone in the request
// (overriding the tenant's UTC) and opens through the repeated hour.
func TestScheduleSlotsInTheNightTheClocksGoBack(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tn, key := e.Tenant("night-desk")
	body := map[string]any{
		"hours":        []map[string]string{{"weekday": "sun", "start": "00:00", "end": "04:00"}, {"weekday": "sat", "start": "22:00", "end": "24:00"}},
		"slot_minutes": 30, "from": "2030-10-26", "to": "2030-10-27", "timezone": "Europe/London",
	}
	res, _ := scheduleSlots(t, e, key, "autumn", body)
	// Saturday 22:00-24:00 BST: 4 slots; Sunday 00:00 BST to 04:00 GMT: five hours, 10 slots.
	if res.Created != 14 || res.Timezone != "Europe/London" {
		t.Fatalf("schedule: %+v", res)
	}
	got := slotStarts(t, e, tn.ID, "", utcTime("2030-10-26T00:00:00Z"), utcTime("2030-10-28T00:00:00Z"))
	if len(got) != 14 || got[0] != "2030-10-26T21:00/30m0s" || got[4] != "2030-10-26T23:00/30m0s" ||
		got[6] != "2030-10-27T00:00/30m0s" || got[8] != "2030-10-27T01:00/30m0s" || got[13] != "2030-10-27T03:30/30m0s" {
		t.Fatalf("slots %v", got)
	}
	noDuplicateSlots(t, e)
}

func TestScheduleSlotsUseTheTenantsZoneAndSkipThePast(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tn, key := zonedTenant(t, e, "ny", "", "America/New_York")
	res, _ := scheduleSlots(t, e, key, "ny-week", map[string]any{
		"hours": []map[string]string{{"weekday": "mon", "start": "09:00", "end": "10:00"}}, "slot_minutes": 60,
		"from": "2030-01-07", "to": "2030-01-07",
	})
	if res.Created != 1 || res.Timezone != "America/New_York" {
		t.Fatalf("schedule: %+v", res)
	}
	if n := e.Count("SELECT count(*) FROM slots WHERE tenant_id = $1 AND starts_at = '2030-01-07T14:00:00Z'", tn.ID); n != 1 {
		t.Fatal("09:00 in New York is not a slot at 14:00 UTC")
	}
	// Yesterday to tomorrow, round the clock: what has started is skipped.
	now := time.Now().UTC()
	var hours []map[string]string
	for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
		hours = append(hours, map[string]string{"weekday": d, "start": "00:00", "end": "24:00"})
	}
	res, _ = scheduleSlots(t, e, key, "around-now", map[string]any{
		"resource": "desk", "hours": hours, "slot_minutes": 60, "timezone": "UTC",
		"from": now.AddDate(0, 0, -1).Format(time.DateOnly), "to": now.AddDate(0, 0, 1).Format(time.DateOnly),
	})
	if res.Created+res.SkippedPast != 72 || res.SkippedPast < 24 || res.SkippedPast > 48 || res.Skipped != res.SkippedPast {
		t.Fatalf("around now: %+v", res)
	}
	if n := e.Count("SELECT count(*) FROM slots WHERE tenant_id = $1 AND resource = 'desk' AND starts_at > now() - interval '1 minute'", tn.ID); n != res.Created {
		t.Fatalf("future slots = %d, want %d", n, res.Created)
	}
	if n := e.Count("SELECT count(*) FROM slots WHERE tenant_id = $1 AND resource = 'desk'", tn.ID); n != res.Created {
		t.Fatalf("slots = %d, want %d: a past slot was created", n, res.Created)
	}
}

// TestConcurrentSchedulesCreateEachSlotOnce: schedules of one resource
// applied at the same time under different keys never both create a time.
func TestConcurrentSchedulesCreateEachSlotOnce(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tn, key := e.Tenant("busy")
	body := map[string]any{"resource": "Room 1", "hours": weekdays9to5(), "slot_minutes": 15, "from": "2030-01-07", "to": "2030-01-20"}
	const n = 4
	results := make([]scheduled, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], _ = scheduleSlots(t, e, key, fmt.Sprintf("concurrent-%d", i), body) })
	}
	wg.Wait()
	total := 0
	for _, r := range results {
		total += r.Created
		if r.Created+r.SkippedExisting != 10*32 {
			t.Errorf("a schedule accounted for %d slots, want 320: %+v", r.Created+r.SkippedExisting, r)
		}
	}
	if total != 320 {
		t.Fatalf("the schedules created %d slots together, want 320", total)
	}
	if c := e.Count("SELECT count(*) FROM slots WHERE tenant_id = $1", tn.ID); c != 320 {
		t.Fatalf("slots = %d, want 320", c)
	}
	noDuplicateSlots(t, e)
}

// TestScheduleSlotsRefusesBadInputAndTooManySlots: each is a 400 naming the
// field, nothing is created, and the key stays free.
func TestScheduleSlotsRefusesBadInputAndTooManySlots(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	_, key := e.Tenant("strict")
	base := func(extra ...any) map[string]any {
		m := map[string]any{"hours": weekdays9to5(), "slot_minutes": 30, "from": "2030-01-07", "to": "2030-01-13"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	one := func(weekday, start, end string) []map[string]string {
		return []map[string]string{{"weekday": weekday, "start": start, "end": end}}
	}
	allDay := func() []map[string]string {
		var h []map[string]string
		for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
			h = append(h, map[string]string{"weekday": d, "start": "00:00", "end": "24:00"})
		}
		return h
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{base("hours", []any{}), "hours"},
		{base("hours", nil), "hours"},
		{base("hours", one("monday", "09:00", "17:00")), "hours[0].weekday"},
		{base("hours", one("mon", "9:00", "17:00")), "hours[0].start"},
		{base("hours", one("mon", "09:00", "24:30")), "hours[0].end"},
		{base("hours", one("mon", "17:00", "09:00")), "hours[0].end"},
		{base("hours", append(one("tue", "09:00", "12:00"), one("tue", "11:00", "13:00")...)), "hours"},
		{base("hours", one("mon", "09:00", "09:20")), "hours"},                     // no 30-minute slot fits
		{base("hours", one("sat", "09:00", "17:00"), "to", "2030-01-11"), "hours"}, // no Saturday in range
		{base("slot_minutes", 4), "slot_minutes"},
		{base("slot_minutes", 1441), "slot_minutes"},
		{base("slot_minutes", 30.5), "slot_minutes"},
		{base("from", "2030-1-7"), "from"},
		{base("from", "2030-01-07T00:00:00Z"), "from"},
		{base("to", "2030-01-06"), "to"},
		{base("to", "2031-01-09"), "to"},
		{base("timezone", "Mars/Olympus"), "timezone"},
		{base("timezone", "Local"), "timezone"},
		// Every day round the clock in 5-minute slots: 288 a day, 2016 a week.
		{base("hours", allDay(), "slot_minutes", 5), "to"},
	} {
		r := e.Post("/v1/slots/schedule", key, "bad-input", c.body)
		var p struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		}
		if r.Status != http.StatusBadRequest || json.Unmarshal(r.Body, &p) != nil || p.Code != "INVALID_INPUT" || p.Field != c.field {
			t.Errorf("%v: want 400 naming %s, got %d %s", c.body, c.field, r.Status, r.Body)
		}
	}
	if r := e.Post("/v1/slots/schedule", key, "", base()); r.Status != http.StatusBadRequest || !bytes.Contains(r.Body, []byte("IDEMPOTENCY_KEY_MISSING")) {
		t.Errorf("without a key: %d %s", r.Status, r.Body)
	}
	if n := e.Count("SELECT count(*) FROM slots") + e.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("refused schedules left %d rows", n)
	}
	// 2000 slots is the bound, not past it: six days of 5-minute slots
	// (1728) pass, and the refused requests left the key free.
	res, _ := scheduleSlots(t, e, key, "bad-input", base("hours", allDay(), "slot_minutes", 5, "to", "2030-01-12"))
	if res.Created != 6*288 {
		t.Fatalf("six days: %+v", res)
	}
}
