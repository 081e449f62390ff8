package reconcile_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/buildtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// oncecallProcess is `oncecall serve` running as a real child process.
type oncecallProcess struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	logs *simtest.Buffer
}

// buildOncecall is cmd/oncecall built once for this test process: the
// tests that run it as a process share one build.
func buildOncecall(t *testing.T) string {
	t.Helper()
	return buildtest.Command(t, "cmd/oncecall")
}

// startOncecall runs serve on a free port and waits until it logs its address.
func startOncecall(t *testing.T, bin string, env ...string) *oncecallProcess {
	t.Helper()
	p := &oncecallProcess{done: make(chan struct{}), logs: &simtest.Buffer{}}
	p.cmd = exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(p.logs, sc.Text())
			var l struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "serving" {
				addr <- l.Addr
			}
		}
		p.cmd.Wait() //nolint:errcheck // a killed child exits non-zero by design
		close(p.done)
	}()
	t.Cleanup(p.kill)
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		t.Fatalf("oncecall exited before serving:\n%s", p.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("oncecall did not start:\n%s", p.logs)
	}
	return p
}

func (p *oncecallProcess) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill() //nolint:errcheck
		<-p.done
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", deadline, what)
		}
		<-time.After(20 * time.Millisecond) // poll interval of a condition wait
	}
}

func TestKilledWorkerIsFinishedByTheReconciler(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	// The provider takes its time: the booking is in flight when we kill
	// oncecall, and the provider commits it after oncecall is gone.
	sim.Fault(provider.Calendar, "delay=2s", 1)
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := db.New(pool)
	tenant, key, err := store.CreateTenant(t.Context(), "crash", "")
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

	bin := buildOncecall(t)
	env := []string{
		"DATABASE_URL=" + url, "ONCECALL_PROVIDER_CALENDAR_URL=" + sim.URL, "ONCECALL_LEASE=1s",
		"ONCECALL_RECONCILE_INTERVAL=100ms", "ONCECALL_RATE_LIMIT=0", "ONCECALL_PRUNE_INTERVAL=0",
	}
	first := startOncecall(t, bin, append(env, "ONCECALL_NO_RECONCILE=true")...)
	go func() {
		body := fmt.Sprintf(`{"customer_id":%q,"slot_id":%q}`, customer.ID, slot.ID)
		req, _ := http.NewRequest(http.MethodPost, first.url+"/v1/appointments", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "crash-booking")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close() // the process is killed first; an answer would be a test bug caught below
		}
	}()
	waitFor(t, "the booking to reach the provider", 20*time.Second, func() bool { return inFlight(t, sim.URL) > 0 })
	first.kill()
	waitFor(t, "the provider to commit the booking", 20*time.Second, func() bool { return len(sim.Ledger(provider.Calendar)) == 1 })

	var state string
	if err := pool.QueryRow(context.Background(), "SELECT state FROM actions WHERE idempotency_key = 'crash-booking'").Scan(&state); err != nil || state != "running" {
		t.Fatalf("after the kill the action is %q (%v), want running: nothing recorded the provider's answer", state, err)
	}
	startOncecall(t, bin, env...)
	waitFor(t, "the reconciler to finish the action", 30*time.Second, func() bool {
		var outcome *string
		err := pool.QueryRow(context.Background(), "SELECT outcome FROM actions WHERE idempotency_key = 'crash-booking'").Scan(&outcome)
		return err == nil && outcome != nil && *outcome == "confirmed"
	})
	ledger := sim.Ledger(provider.Calendar)
	if len(ledger) != 1 {
		t.Fatalf("ledger holds %d bookings, want 1", len(ledger))
	}
	var ref string
	if err := pool.QueryRow(context.Background(), "SELECT provider_ref FROM action_steps s JOIN actions a ON a.id = s.action_id WHERE a.idempotency_key = 'crash-booking'").Scan(&ref); err != nil || ref != ledger[0].ID {
		t.Fatalf("step provider_ref %q (%v), ledger %s", ref, err, ledger[0].ID)
	}
}

func inFlight(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var h struct {
		InFlight int `json:"in_flight"`
	}
	json.NewDecoder(resp.Body).Decode(&h) //nolint:errcheck // zero on a bad answer
	return h.InFlight
}
