package api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/nodetest"
)

// pythonDir holds oncecall_agents.py, oncecall's standard-library-only
// module for Pipecat and LiveKit Agents (Python), and its tests.
const pythonDir = "../clients/python"

// TestPythonAgentModule runs clients/python's tests (python3 -m unittest)
// against a live server: a Pipecat booking cancelled by an interruption and
// re-run under a new tool_call_id makes one appointment, answered confirmed
// with the first run's action; LiveKit raw tools keep per-call actions apart
// by the call id, never by the tool call id; no answer is pending. Neither
// framework can be installed here: the tests use the call shapes their docs
// publish. It needs python3: skipped without it, a failure in CI.
func TestPythonAgentModule(t *testing.T) {
	t.Parallel()
	python := nodetest.Python(t)
	e := apptest.Start(t)
	tenant, key := e.Tenant("pipecat")
	customer := e.Customer(tenant.ID)
	slotA, slotB := e.Slot(tenant.ID, 1), e.Slot(tenant.ID, 2)
	tools := exportTools(t, e.URL)

	out, err := nodetest.Output(t, pythonDir, []string{
		"ONCECALL_KEY=" + key, "ONCECALL_TOOLS=" + tools, "ONCECALL_CUSTOMER=" + customer.String(),
		"ONCECALL_SLOTS=" + slotA.String() + "," + slotB.String(), "PYTHONDONTWRITEBYTECODE=1",
	}, python, "-m", "unittest", "-v", "test_oncecall_agents")
	if err != nil || !regexp.MustCompile(`(?m)^Ran 4 tests in `).MatchString(out) || !strings.Contains(out, "\nOK\n") ||
		strings.Contains(out, "skipped") {
		t.Fatalf("the Python module's tests did not all pass (%v):\n%s", err, out)
	}
	t.Log(out)

	// The interrupted and re-run booking is one appointment and one action.
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slotA); n != 1 {
		t.Errorf("appointments of the interrupted booking's slot = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND operation = 'appointment.book'", tenant.ID); n != 1 {
		t.Errorf("booking actions = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM customer_notes WHERE tenant_id = $1", tenant.ID); n != 2 {
		t.Errorf("notes = %d, want 2 (one per call)", n)
	}
}

// TestPythonLateResult runs clients/python's late-result test against a
// live server whose calendar is slower than the budget: the Pipecat
// handler of a booking, registered with cancel_on_interruption=False, gets
// pending from oncecall, goes on in the background, and gives
// result_callback the settled answer, which is injected and spoken. One
// action, one write at the calendar. It needs python3.
func TestPythonLateResult(t *testing.T) {
	t.Parallel()
	python := nodetest.Python(t)
	sim, providers := slowCalendar(t, "4s")
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = providers
		c.DashaBudget, c.DashaWait = time.Second, 500*time.Millisecond
	})
	tenant, key := e.Tenant("pipecat-late")
	customer, slot := e.Customer(tenant.ID), e.Slot(tenant.ID, 1)
	out, err := nodetest.Output(t, pythonDir, []string{
		"ONCECALL_KEY=" + key, "ONCECALL_TOOLS=" + exportTools(t, e.URL), "ONCECALL_CUSTOMER=" + customer.String(),
		"ONCECALL_SLOTS=" + slot.String(), "PYTHONDONTWRITEBYTECODE=1",
	}, python, "-m", "unittest", "-v", "test_late_results")
	if err != nil || !regexp.MustCompile(`(?m)^Ran 1 test in `).MatchString(out) || !strings.Contains(out, "\nOK\n") ||
		strings.Contains(out, "skipped") {
		t.Fatalf("the Python module's late-result test did not pass (%v):\n%s", err, out)
	}
	t.Log(out)
	lateBookedOnce(t, e, sim, tenant.ID)
}

// TestPythonReadOnlyToolsAreOncecalls holds the Python module's list of
// read-only tools (registered with Pipecat's default, cancellable) to
// oncecall's.
func TestPythonReadOnlyToolsAreOncecalls(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join(pythonDir, "oncecall_agents.py"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)_READ_ONLY = frozenset\(\{(.*?)\}\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("oncecall_agents.py has no _READ_ONLY set")
	}
	listed := map[string]bool{}
	for _, q := range regexp.MustCompile(`"([a-z_]+)"`).FindAllSubmatch(m[1], -1) {
		listed[string(q[1])] = true
	}
	defs, err := dashatool.Definitions(app.Operations(), "https://x.example", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if dashatool.ReadOnly(d.Name) != listed[d.Name] {
			t.Errorf("%s: read-only %v in oncecall, listed %v in oncecall_agents.py", d.Name, dashatool.ReadOnly(d.Name), listed[d.Name])
		}
	}
}
