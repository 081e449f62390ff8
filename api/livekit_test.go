package api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/nodetest"
)

// liveKitDir holds @oncecall/livekit, oncecall's tools for LiveKit Agents
// (Node.js), with @livekit/agents pinned by its package-lock.json.
const liveKitDir = "../clients/livekit"

// TestLiveKitAgentsPackage builds clients/livekit and runs its tests
// (node --test) against a live server: a real LiveKit AgentSession whose
// booking tool is interrupted while it runs and re-run by the model under a
// new tool call id makes one appointment, answered confirmed both times with
// one action; per-call actions are kept apart by the session's call id; no
// answer is pending. It needs Node.js 20+ and npm: skipped without them, a
// failure in CI.
func TestLiveKitAgentsPackage(t *testing.T) {
	t.Parallel()
	node, npm := nodetest.Node(t)
	nodetest.Install(t, liveKitDir, npm)
	nodetest.Run(t, liveKitDir, npm, "run", "--silent", "build")

	e := apptest.Start(t)
	tenant, key := e.Tenant("livekit")
	customer := e.Customer(tenant.ID)
	slotA, slotB := e.Slot(tenant.ID, 1), e.Slot(tenant.ID, 2)
	tools := exportTools(t, e.URL)

	out, err := nodetest.Output(t, liveKitDir, []string{
		"ONCECALL_KEY=" + key, "ONCECALL_TOOLS=" + tools, "ONCECALL_CUSTOMER=" + customer.String(),
		"ONCECALL_SLOTS=" + slotA.String() + "," + slotB.String(),
	}, node, "--test", "--test-reporter=spec", "dist/test/replay.test.js")
	if err != nil || !regexp.MustCompile(`(?m)^ℹ pass 3$`).MatchString(out) || !strings.Contains(out, "ℹ fail 0") {
		t.Fatalf("the LiveKit package's tests did not all pass (%v):\n%s", err, out)
	}
	t.Log(out)

	// The interrupted and re-run booking is one appointment and one action.
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slotA); n != 1 {
		t.Errorf("appointments of the interrupted booking's slot = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", tenant.ID); n != 2 {
		t.Errorf("appointments = %d, want 2 (the interrupted booking and the one booked from two calls)", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND operation = 'appointment.book'", tenant.ID); n != 2 {
		t.Errorf("booking actions = %d, want 2", n)
	}
	// The note: one in room-a (asked twice), one in room-b.
	if n := e.Count("SELECT count(*) FROM customer_notes WHERE tenant_id = $1", tenant.ID); n != 2 {
		t.Errorf("notes = %d, want 2", n)
	}
}

// TestLiveKitLateResult runs clients/livekit's late-result test in a real
// LiveKit AgentSession against a live server whose calendar is slower than
// the budget: the booking tool, in the package's AsyncToolset, returns the
// pending answer (the agent says nothing is confirmed yet), and when the
// booking settles the agent speaks it. One appointment, one action, one
// write at the calendar.
func TestLiveKitLateResult(t *testing.T) {
	t.Parallel()
	node, npm := nodetest.Node(t)
	nodetest.Install(t, liveKitDir, npm)
	nodetest.Run(t, liveKitDir, npm, "run", "--silent", "build")

	sim, providers := slowCalendar(t, "4s")
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = providers
		c.DashaBudget, c.DashaWait = time.Second, 500*time.Millisecond
	})
	tenant, key := e.Tenant("livekit-late")
	customer, slot := e.Customer(tenant.ID), e.Slot(tenant.ID, 1)
	out, err := nodetest.Output(t, liveKitDir, []string{
		"ONCECALL_KEY=" + key, "ONCECALL_TOOLS=" + exportTools(t, e.URL), "ONCECALL_CUSTOMER=" + customer.String(),
		"ONCECALL_SLOTS=" + slot.String(),
	}, node, "--test", "--test-reporter=spec", "dist/test/late.test.js")
	if err != nil || !regexp.MustCompile(`(?m)^ℹ pass 1$`).MatchString(out) || !strings.Contains(out, "ℹ fail 0") {
		t.Fatalf("the LiveKit package's late-result test did not pass (%v):\n%s", err, out)
	}
	t.Log(out)
	lateBookedOnce(t, e, sim, tenant.ID)
}

// lateBookedOnce checks that a booking answered pending and spoken when it
// settled is one action, confirmed, and one write at the (remote) calendar.
func lateBookedOnce(t *testing.T, e *apptest.Env, sim *simtest.Sim, tenant uuid.UUID) {
	t.Helper()
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND operation = 'appointment.book'", tenant); n != 1 {
		t.Errorf("booking actions = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND state = 'completed' AND outcome = 'confirmed'", tenant); n != 1 {
		t.Errorf("confirmed actions = %d, want 1", n)
	}
	if l := sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Errorf("the calendar holds %d bookings, want 1", len(l))
	}
}

// exportTools writes `oncecall tools export --base-url url` (the Dasha-shaped
// definitions the in-process packages take) to a file and returns its path.
func exportTools(t *testing.T, url string) string {
	t.Helper()
	defs, err := dashatool.Definitions(app.Operations(), url, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := dashatool.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
