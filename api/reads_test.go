package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

type readsEnv struct {
	*apptest.Env
	key          string
	tenant, ana  uuid.UUID
	otherKey     string
	other, bruno uuid.UUID
}

const anaPhone = "+447700900456"

// setupReads starts oncecall with two tenants in different timezones, each
// with a customer holding the same phone number.
func setupReads(t *testing.T) readsEnv {
	t.Helper()
	e := apptest.Start(t)
	tn, key := zonedTenant(t, e, "acme", testOrg, "America/New_York")
	other, otherKey := zonedTenant(t, e, "other", "", "Asia/Tokyo")
	ana, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tn.ID, Name: "Ana", Phone: anaPhone})
	if err != nil {
		t.Fatal(err)
	}
	bruno, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: other.ID, Name: "Bruno", Phone: anaPhone, Email: "bruno@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	return readsEnv{Env: e, key: key, tenant: tn.ID, ana: ana.ID, otherKey: otherKey, other: other.ID, bruno: bruno.ID}
}

// slotAt creates a free slot of tenant from start for 30 minutes.
func slotAt(t *testing.T, e *apptest.Env, tenant uuid.UUID, start time.Time, resource string) uuid.UUID {
	t.Helper()
	s, err := e.Store.CreateSlot(t.Context(), db.NewSlot{TenantID: tenant, StartsAt: start, EndsAt: start.Add(30 * time.Minute), Resource: resource})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// bookREST books a slot for a customer through the REST API and returns the appointment's id.
func bookREST(t *testing.T, e *apptest.Env, key string, customer, slot uuid.UUID) string {
	t.Helper()
	r := e.Post("/v1/appointments", key, uuid.NewString(), map[string]any{"customer_id": customer, "slot_id": slot, "service": "Haircut"})
	if r.Status != http.StatusCreated {
		t.Fatalf("book: %d %s", r.Status, r.Body)
	}
	return resultOf(t, r)["id"].(string)
}

// wantBadQuery checks a 400 problem naming the query parameter.
func wantBadQuery(t *testing.T, r apptest.Response, field string) {
	t.Helper()
	var p struct {
		Code  string `json:"code"`
		Field string `json:"field"`
	}
	if r.Status != http.StatusBadRequest || r.Header.Get("Content-Type") != "application/problem+json" ||
		json.Unmarshal(r.Body, &p) != nil || p.Code != "INVALID_INPUT" || p.Field != field {
		t.Errorf("want 400 INVALID_INPUT naming %s, got %d %s", field, r.Status, r.Body)
	}
}

func TestFindCustomersByPhoneSeesOnlyTheTenant(t *testing.T) {
	t.Parallel()
	e := setupReads(t)
	ids := func(r apptest.Response) []string {
		t.Helper()
		if r.Status != http.StatusOK {
			t.Fatalf("find customers: %d %s", r.Status, r.Body)
		}
		var body struct {
			Customers []struct {
				ID    string `json:"id"`
				Phone string `json:"phone"`
			} `json:"customers"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Customers == nil {
			t.Fatalf("find customers: %s", r.Body)
		}
		var out []string
		for _, c := range body.Customers {
			if c.Phone != anaPhone {
				t.Errorf("customer %s has phone %s", c.ID, c.Phone)
			}
			out = append(out, c.ID)
		}
		return out
	}
	// Every spelling customer.create accepts finds the record; an
	// unencoded + (read as a space) too.
	for _, q := range []string{
		url.QueryEscape(anaPhone), anaPhone, url.QueryEscape("+44 7700 900456"), url.QueryEscape("0044 (7700) 900-456"),
	} {
		if got := ids(e.Get("/v1/customers?phone="+q, e.key)); len(got) != 1 || got[0] != e.ana.String() {
			t.Errorf("phone=%s with the first tenant's key: %v, want only %s", q, got, e.ana)
		}
		if got := ids(e.Get("/v1/customers?phone="+q, e.otherKey)); len(got) != 1 || got[0] != e.bruno.String() {
			t.Errorf("phone=%s with the other tenant's key: %v, want only %s", q, got, e.bruno)
		}
	}
	if got := ids(e.Get("/v1/customers?phone=%2B14155550100", e.key)); len(got) != 0 {
		t.Errorf("an unknown number found %v", got)
	}
	for q, field := range map[string]string{
		"":                   "phone",
		"?phone=":            "phone",
		"?phone=07700900456": "phone",
		"?phone=call%20me":   "phone",
		"?phone=%2B447700900456&phone=%2B447700900457": "phone",
		"?phone=%2B447700900456&name=Ana":              "name",
	} {
		wantBadQuery(t, e.Get("/v1/customers"+q, e.key), field)
	}
	if r := e.Get("/v1/customers?phone=%2B447700900456", ""); r.Status != http.StatusUnauthorized {
		t.Errorf("without a key: %d", r.Status)
	}
}

func TestListAppointmentsSeesOnlyTheTenant(t *testing.T) {
	t.Parallel()
	e := setupReads(t)
	base := time.Now().UTC().Truncate(time.Hour).Add(24 * time.Hour)
	var ids []string
	for i := range 4 {
		ids = append(ids, bookREST(t, e.Env, e.key, e.ana, slotAt(t, e.Env, e.tenant, base.Add(time.Duration(i)*24*time.Hour), "")))
	}
	if r := e.Post("/v1/appointments/"+ids[3]+"/cancel", e.key, uuid.NewString(), map[string]any{}); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	theirs := bookREST(t, e.Env, e.otherKey, e.bruno, slotAt(t, e.Env, e.other, base.Add(-time.Hour), ""))

	type list struct {
		Timezone     string `json:"timezone"`
		HasMore      bool   `json:"has_more"`
		Appointments []struct {
			ID            string `json:"id"`
			CustomerID    string `json:"customer_id"`
			Status        string `json:"status"`
			StartsAt      string `json:"starts_at"`
			StartsAtLocal string `json:"starts_at_local"`
			When          string `json:"when"`
		} `json:"appointments"`
	}
	get := func(key, query string) list {
		t.Helper()
		r := e.Get("/v1/appointments?"+query, key)
		var l list
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &l) != nil || l.Appointments == nil {
			t.Fatalf("list %s: %d %s", query, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), theirs) && key == e.key || strings.Contains(string(r.Body), ids[0]) && key == e.otherKey {
			t.Fatalf("list %s shows another tenant's appointment: %s", query, r.Body)
		}
		return l
	}
	// A New York tenant speaks en-US unless it chooses otherwise.
	ny, _ := schedule.NewClock("America/New_York", "en-US")
	l := get(e.key, "customer_id="+e.ana.String())
	if l.Timezone != "America/New_York" || l.HasMore || len(l.Appointments) != 3 {
		t.Fatalf("all: %+v", l)
	}
	for i, a := range l.Appointments {
		start := base.Add(time.Duration(i) * 24 * time.Hour)
		if a.ID != ids[i] || a.CustomerID != e.ana.String() || a.Status != "active" || a.StartsAt != start.Format(time.RFC3339) ||
			a.StartsAtLocal != start.In(ny.Loc).Format(time.RFC3339) || a.When != ny.Spoken(start, time.Now()) {
			t.Errorf("appointment %d: %+v", i, a)
		}
	}
	if l := get(e.key, "customer_id="+e.ana.String()+"&limit=2"); len(l.Appointments) != 2 || !l.HasMore || l.Appointments[1].ID != ids[1] {
		t.Errorf("limit 2: %+v", l)
	}
	from := url.QueryEscape(base.Add(24 * time.Hour).In(ny.Loc).Format(time.RFC3339))
	if l := get(e.key, "customer_id="+e.ana.String()+"&from="+from+"&limit=2"); len(l.Appointments) != 2 || l.HasMore || l.Appointments[0].ID != ids[1] {
		t.Errorf("from the second: %+v", l)
	}
	// The other tenant's customer: nothing with this key, its own with its key.
	if l := get(e.key, "customer_id="+e.bruno.String()); len(l.Appointments) != 0 {
		t.Errorf("the other tenant's customer: %+v", l)
	}
	if l := get(e.otherKey, "customer_id="+e.bruno.String()); l.Timezone != "Asia/Tokyo" || len(l.Appointments) != 1 || l.Appointments[0].ID != theirs {
		t.Errorf("with the other tenant's key: %+v", l)
	}
	if l := get(e.otherKey, "customer_id="+e.ana.String()); len(l.Appointments) != 0 {
		t.Errorf("the first tenant's customer with the other key: %+v", l)
	}
	c := "customer_id=" + e.ana.String()
	for q, field := range map[string]string{
		"":                      "customer_id",
		"customer_id=ana":       "customer_id",
		c + "&from=tomorrow":    "from",
		c + "&from=2030-01-02":  "from",
		c + "&limit=0":          "limit",
		c + "&limit=101":        "limit",
		c + "&limit=ten":        "limit",
		c + "&limit=1&limit=2":  "limit",
		c + "&status=cancelled": "status",
		"customer_id=" + e.bruno.String() + "&" + c: "customer_id",
	} {
		wantBadQuery(t, e.Get("/v1/appointments?"+q, e.key), field)
	}
}

// A query string that does not parse (a ';', a bad escape) is refused with
// a 400 naming the parameter, never read as if the bad part were absent:
// a cursor or a filter the caller gave is never silently dropped.
func TestAMalformedQueryIsRefused(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	_, key := zonedTenant(t, e, "acme", testOrg, "America/New_York")
	for path, field := range map[string]string{
		"/v1/waitlist?after=x;y":           "after",
		"/v1/waitlist?status=active%zz":    "status",
		"/v1/customers?phone=%2B4420;x":    "phone",
		"/v1/appointments?customer_id=%G1": "customer_id",
		"/v1/payment-intents?customer_id=00000000-0000-4000-8000-000000000001&limit=10;x=1": "limit",
	} {
		wantBadQuery(t, e.Get(path, key), field)
	}
}
