package api_test

import (
	"regexp"
	"strings"
	"testing"

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
