package reconcile_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// A Vapi booking is answered pending by a real `oncecall serve` (the
// calendar is slower than the budget), and the server is killed with
// SIGKILL while the calendar still works on it. A new server finishes the
// booking from the calendar's evidence, and the call, still live, gets the
// settled answer on its control URL once: the delivery was not held in the
// killed process's memory.
func TestLateResultSurvivesAKilledServer(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	sim.Fault(provider.Calendar, "delay=4s", 1)
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := db.New(pool)
	tenant, key, err := store.CreateTenant(t.Context(), "late", "")
	if err != nil {
		t.Fatal(err)
	}
	customer, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant.ID, Name: "C"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(48 * time.Hour).Truncate(time.Hour)
	slot, err := store.CreateSlot(t.Context(), db.NewSlot{TenantID: tenant.ID, StartsAt: start, EndsAt: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got [][]byte
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
	}))
	defer control.Close()
	received := func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), got...)
	}

	bin := buildOncecall(t)
	env := []string{
		"DATABASE_URL=" + url, "ONCECALL_PROVIDER_CALENDAR_URL=" + sim.URL, "ONCECALL_LEASE=1s",
		"ONCECALL_RECONCILE_INTERVAL=100ms", "ONCECALL_RATE_LIMIT=0", "ONCECALL_PRUNE_INTERVAL=0",
		"ONCECALL_DASHA_BUDGET=1s", "ONCECALL_DASHA_WAIT=500ms", "ONCECALL_LATE_RESULT_HOSTS=127.0.0.1",
	}
	first := startOncecall(t, bin, append(env, "ONCECALL_NO_RECONCILE=true")...)
	body, _ := json.Marshal(map[string]any{"message": map[string]any{
		"type": "tool-calls",
		"toolCallList": []map[string]any{{"id": "tc-1", "type": "function", "function": map[string]any{
			"name": "book_appointment", "arguments": map[string]any{"customer_id": customer.ID, "slot_id": slot.ID}}}},
		"call": map[string]any{"id": "killed-call", "monitor": map[string]any{"controlUrl": control.URL + "/control"}},
	}})
	req, _ := http.NewRequest(http.MethodPost, first.url+"/v1/vapi/webhook", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(answer, []byte(`\"outcome\":\"pending\"`)) {
		t.Fatalf("want a pending answer, got %d %s", resp.StatusCode, answer)
	}
	first.kill()
	waitFor(t, "the calendar to commit the booking", 20*time.Second, func() bool { return len(sim.Ledger(provider.Calendar)) == 1 })
	if n := len(received()); n != 0 {
		t.Fatalf("%d deliveries before the action settled", n)
	}

	startOncecall(t, bin, env...)
	waitFor(t, "the late result to reach the call", 60*time.Second, func() bool { return len(received()) > 0 })
	var id string
	if err := pool.QueryRow(t.Context(), "SELECT id::text FROM actions WHERE call_id = 'killed-call' AND outcome = 'confirmed'").Scan(&id); err != nil {
		t.Fatalf("the booking did not settle confirmed: %v", err)
	}
	waitFor(t, "the delivery job to finish", 30*time.Second, func() bool {
		var open int
		err := pool.QueryRow(t.Context(), "SELECT count(*) FROM river_job WHERE args->>'action_id' = $1 AND state <> 'completed'", id).Scan(&open)
		return err == nil && open == 0
	})
	msgs := received()
	if len(msgs) != 1 {
		t.Fatalf("%d deliveries, want 1: %s", len(msgs), msgs)
	}
	if !bytes.Contains(msgs[0], []byte(id)) || !bytes.Contains(msgs[0], []byte("book_appointment")) {
		t.Fatalf("the delivery: %s", msgs[0])
	}
	if l := sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Fatalf("the calendar holds %d bookings, want 1", len(l))
	}
}
