package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// ask posts a tool call with endpoint set to the given JSON value (absent when nil).
func (e readsEnv) ask(t *testing.T, tool string, args map[string]any, endpoint any) answer {
	t.Helper()
	body := payload(tool, "call_reads", args)
	if endpoint != nil {
		body["endpoint"] = endpoint
	}
	r := e.Post("/v1/dasha/tools/"+tool, e.key, "", body)
	sent, _ := json.Marshal(args)
	for _, s := range []string{e.bruno.String(), "Bruno", "bruno@", "7700900456", "7700 900456"} {
		if strings.Contains(string(r.Body), s) && !strings.Contains(string(sent), s) { // a rejection names the id it was given
			t.Errorf("%s answered with %q: %s", tool, s, r.Body)
		}
	}
	return decodeAnswer(t, r)
}

type foundCustomers struct {
	Customers []struct {
		CustomerID string `json:"customer_id"`
		Name       string `json:"name"`
		Points     int64  `json:"points"`
		HasPhone   bool   `json:"has_phone"`
		HasEmail   bool   `json:"has_email"`
	} `json:"customers"`
	PhoneSource string `json:"phone_source"`
}

func TestDashaFindCustomerReadsTheCallersNumber(t *testing.T) {
	t.Parallel()
	e := setupReads(t)
	// Dasha does not document endpoint's shape: a phone number in a string
	// (or a tel: or sip: URI) is used, anything else is ignored.
	for _, endpoint := range []any{
		anaPhone, "+44 7700 900456", "0044 7700 900456", "tel:+44-7700-900-456", "sip:+447700900456@pbx.example;user=phone", "SIP:+447700900456@pbx.example",
	} {
		a := e.ask(t, "find_customer", map[string]any{}, endpoint)
		var got foundCustomers
		decodeDetails(t, a, &got)
		if a.Outcome != "confirmed" || got.PhoneSource != "call" || len(got.Customers) != 1 || got.Customers[0].CustomerID != e.ana.String() ||
			got.Customers[0].Name != "Ana" || !got.Customers[0].HasPhone || got.Customers[0].HasEmail {
			t.Errorf("endpoint %v: %+v", endpoint, a)
		}
	}
	for _, endpoint := range []any{
		nil, "", "anonymous", "sip:reception@pbx.example", "07700900456", 447700900456,
		map[string]any{"phone": anaPhone}, []any{anaPhone}, true,
	} {
		a := e.ask(t, "find_customer", nil, endpoint)
		if a.Outcome != "rejected" || a.Reason != "invalid_arguments" || !strings.Contains(a.Say, "no caller number") ||
			!strings.Contains(a.Say, "phone") || a.ActionID != "" {
			t.Errorf("endpoint %#v: %+v", endpoint, a)
		}
	}
	// A number not on file is an answer, not an error.
	a := e.ask(t, "find_customer", map[string]any{}, "+14155550100")
	var none foundCustomers
	decodeDetails(t, a, &none)
	if a.Outcome != "confirmed" || none.Customers == nil || len(none.Customers) != 0 || !strings.Contains(a.Say, "No customer is on file") {
		t.Errorf("unknown number: %+v", a)
	}
	// The phone argument wins over the call's number.
	a = e.ask(t, "find_customer", map[string]any{"phone": "+1 415 555 0100"}, anaPhone)
	decodeDetails(t, a, &none)
	if a.Outcome != "confirmed" || none.PhoneSource != "argument" || len(none.Customers) != 0 {
		t.Errorf("phone argument: %+v", a)
	}
	a = e.ask(t, "find_customer", map[string]any{"phone": "07700 900456"}, anaPhone)
	if a.Outcome != "rejected" || a.Reason != "invalid_arguments" || !strings.Contains(a.Say, "phone") {
		t.Errorf("a national number: %+v", a)
	}
	// The other tenant finds its own customer with the same number.
	r := e.Post("/v1/dasha/tools/find_customer", e.otherKey, "", map[string]any{
		"type": "ToolWebHookPayload", "callId": "call_other", "orgId": "org_any", "arguments": map[string]any{}, "endpoint": anaPhone,
	})
	var theirs foundCustomers
	decodeDetails(t, decodeAnswer(t, r), &theirs)
	if len(theirs.Customers) != 1 || theirs.Customers[0].CustomerID != e.bruno.String() || !theirs.Customers[0].HasEmail ||
		strings.Contains(string(r.Body), e.ana.String()) || strings.Contains(string(r.Body), "bruno@example.com") {
		t.Errorf("the other tenant: %s", r.Body)
	}
	if n := e.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Errorf("reads claimed %d actions", n)
	}
}

func TestDashaGetCustomerAndListAppointmentsStayInTheTenant(t *testing.T) {
	t.Parallel()
	e := setupReads(t)
	a := e.ask(t, "get_customer", map[string]any{"customer_id": e.ana}, nil)
	var view map[string]any
	decodeDetails(t, a, &view)
	want := map[string]any{"customer_id": e.ana.String(), "name": "Ana", "points": float64(0), "has_phone": true, "has_email": false, "has_external_ref": false}
	if a.Outcome != "confirmed" || len(view) != len(want) {
		t.Fatalf("get_customer: %+v", a)
	}
	for k, v := range want {
		if view[k] != v {
			t.Errorf("get_customer %s = %v, want %v", k, view[k], v)
		}
	}
	// The other tenant's customer does not exist here, for either read.
	for _, tool := range []string{"get_customer", "list_appointments"} {
		a := e.ask(t, tool, map[string]any{"customer_id": e.bruno}, nil)
		if a.Outcome != "rejected" || a.Reason != "customer_not_found" || !strings.Contains(a.Say, "find_customer") {
			t.Errorf("%s of the other tenant's customer: %+v", tool, a)
		}
	}
	// Give Bruno an appointment: it must not show for Ana's tenant in any way.
	theirSlot := slotAt(t, e.Env, e.other, time.Now().Add(48*time.Hour), "")
	bookREST(t, e.Env, e.otherKey, e.bruno, theirSlot)
	a = e.ask(t, "list_appointments", map[string]any{"customer_id": e.ana}, nil)
	var list struct {
		Timezone     string           `json:"timezone"`
		Appointments []map[string]any `json:"appointments"`
	}
	decodeDetails(t, a, &list)
	if a.Outcome != "confirmed" || list.Timezone != "America/New_York" || list.Appointments == nil || len(list.Appointments) != 0 ||
		!strings.Contains(a.Say, "no upcoming appointments") || strings.Contains(string(a.Details), theirSlot.String()) {
		t.Errorf("list_appointments without any: %+v", a)
	}
	// Ana's appointments, soonest first, cancelled ones left out, limited.
	base := time.Now().UTC().Truncate(time.Hour).Add(24 * time.Hour)
	var ids []string
	for i := range 3 {
		ids = append(ids, bookREST(t, e.Env, e.key, e.ana, slotAt(t, e.Env, e.tenant, base.Add(time.Duration(3-i)*24*time.Hour), "")))
	}
	if r := e.Post("/v1/appointments/"+ids[1]+"/cancel", e.key, uuid.NewString(), map[string]any{}); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	a = e.ask(t, "list_appointments", map[string]any{"customer_id": e.ana, "limit": 1}, nil)
	decodeDetails(t, a, &list)
	if len(list.Appointments) != 1 || list.Appointments[0]["id"] != ids[2] {
		t.Fatalf("limit 1: %s", a.Details)
	}
	a = e.ask(t, "list_appointments", map[string]any{"customer_id": e.ana}, nil)
	decodeDetails(t, a, &list)
	ny, _ := time.LoadLocation("America/New_York")
	if len(list.Appointments) != 2 || list.Appointments[0]["id"] != ids[2] || list.Appointments[1]["id"] != ids[0] ||
		list.Appointments[0]["starts_at_local"] != base.Add(24*time.Hour).In(ny).Format(time.RFC3339) {
		t.Fatalf("list_appointments: %s", a.Details)
	}
	if !strings.Contains(a.Say, "appointment_id") || !strings.Contains(a.Say, "when") {
		t.Errorf("say: %s", a.Say)
	}
}

// TestDashaFreeSlotsSpeakTheTenantsTime: find_available_slots gives every
// slot's time in the tenant's zone and locale (a New York tenant speaks
// en-US unless it chooses otherwise), and falls back to UTC, saying so,
// when the stored zone is unknown.
func TestDashaFreeSlotsSpeakTheTenantsTime(t *testing.T) {
	t.Parallel()
	e := setupReads(t)
	start := time.Date(time.Now().Year()+1, time.July, 4, 18, 30, 0, 0, time.UTC) // 14:30 EDT
	slot := slotAt(t, e.Env, e.tenant, start, "")
	slotAt(t, e.Env, e.other, start.Add(-time.Hour), "") // the other tenant's, earlier
	type slots struct {
		Timezone string `json:"timezone"`
		Slots    []struct {
			ID            string `json:"id"`
			StartsAt      string `json:"starts_at"`
			StartsAtLocal string `json:"starts_at_local"`
			EndsAtLocal   string `json:"ends_at_local"`
			When          string `json:"when"`
		} `json:"slots"`
	}
	a := e.ask(t, "find_available_slots", map[string]any{"from": start.Add(-2 * time.Hour).Format(time.RFC3339)}, nil)
	var got slots
	decodeDetails(t, a, &got)
	weekday := start.In(time.FixedZone("EDT", -4*3600)).Weekday().String()
	if got.Timezone != "America/New_York" || len(got.Slots) != 1 || got.Slots[0].ID != slot.String() ||
		got.Slots[0].StartsAt != start.Format(time.RFC3339) ||
		got.Slots[0].StartsAtLocal != start.Format("2006")+"-07-04T14:30:00-04:00" ||
		got.Slots[0].EndsAtLocal != start.Format("2006")+"-07-04T15:00:00-04:00" ||
		got.Slots[0].When != weekday+", July 4, "+start.Format("2006")+" at 2:30 PM" {
		t.Fatalf("slots: %s", a.Details)
	}
	if !strings.Contains(a.Say, "local time") || strings.Contains(a.Say, "times in UTC") {
		t.Errorf("say: %s", a.Say)
	}
	// A zone set outside oncecall that the zone database lacks: UTC, said.
	if _, err := e.Store.Pool().Exec(t.Context(), "UPDATE tenants SET timezone = 'Mars/Olympus' WHERE id = $1", e.tenant); err != nil {
		t.Fatal(err)
	}
	a = e.ask(t, "find_available_slots", map[string]any{"from": start.Add(-2 * time.Hour).Format(time.RFC3339)}, nil)
	decodeDetails(t, a, &got)
	if got.Timezone != "UTC" || len(got.Slots) != 1 || got.Slots[0].StartsAtLocal != start.Format(time.RFC3339) {
		t.Fatalf("unknown zone: %s", a.Details)
	}
}

// decodeDetails decodes an answer's details strictly enough to catch a
// renamed field: the fields v names must be there.
func decodeDetails(t *testing.T, a answer, v any) {
	t.Helper()
	if err := json.Unmarshal(a.Details, v); err != nil {
		t.Fatalf("details %s: %v", a.Details, err)
	}
}
