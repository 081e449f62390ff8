package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestDemoClinicBooksACleaningWithDrOrtizTomorrowAfternoon: on the demo
// tenant, a Dasha call finds "a cleaning with Dr. Ortiz tomorrow afternoon"
// and books the first time offered, once.
func TestDemoClinicBooksACleaningWithDrOrtizTomorrowAfternoon(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	ctx := t.Context()
	if err := e.Main.SeedDemo(ctx, io.Discard, "bin/oncecall"); err != nil {
		t.Fatal(err)
	}
	demo, err := e.Store.TenantByName(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	key, err := e.Store.AddAPIKey(ctx, demo.ID)
	if err != nil {
		t.Fatal(err)
	}
	var cleaning, ortiz, customer string
	for q, v := range map[string]*string{
		"SELECT id::text FROM services WHERE tenant_id = $1 AND name = 'Cleaning'":       &cleaning,
		"SELECT id::text FROM practitioners WHERE tenant_id = $1 AND name = 'Dr. Ortiz'": &ortiz,
		"SELECT id::text FROM customers WHERE tenant_id = $1 LIMIT 1":                    &customer,
	} {
		if err := e.Store.Pool().QueryRow(ctx, q, demo.ID).Scan(v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tool := func(name string, args map[string]any) (map[string]any, map[string]any) {
		t.Helper()
		r := e.Post("/v1/dasha/tools/"+name, key, "", map[string]any{
			"type": "ToolWebHookPayload", "status": "Running", "callId": "call_demo_1", "agentId": "agent_demo",
			"orgId": "org_demo", "toolName": name, "arguments": args,
		})
		var a map[string]any
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &a) != nil {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
		d, _ := a["details"].(map[string]any)
		return a, d
	}
	_, found := tool("find_available_slots", map[string]any{"service_id": cleaning, "practitioner_id": ortiz,
		"date": "tomorrow", "part_of_day": "afternoon"})
	slots, _ := found["slots"].([]any)
	if len(slots) == 0 {
		t.Fatalf("no time tomorrow afternoon: %v", found)
	}
	first := slots[0].(map[string]any)
	if first["practitioner"] != "Dr. Ortiz" || !strings.Contains(first["when"].(string), "at 13:00") {
		t.Fatalf("the first time offered: %v", first)
	}
	args := map[string]any{"customer_id": customer, "service_id": cleaning, "practitioner_id": ortiz, "starts_at": first["starts_at"]}
	booked, d := tool("book_appointment", args)
	again, _ := tool("book_appointment", args)
	if booked["outcome"] != "confirmed" || d["slot_id"] != first["id"] || again["action_id"] != booked["action_id"] {
		t.Fatalf("booked %v, again %v", booked, again)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1 AND slot_id = $2 AND service_id = $3 AND status = 'active'",
		demo.ID, first["id"], cleaning); n != 1 {
		t.Fatalf("appointments: %d", n)
	}
}
