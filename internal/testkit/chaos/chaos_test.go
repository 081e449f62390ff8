package chaos

import (
	"os"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/testkit/buildtest"
)

// TestMain removes the oncecall the runs share (buildtest) when they end.
func TestMain(m *testing.M) { os.Exit(buildtest.Main(m, (*testing.M).Run)) }

// workDir is a folder for a run that the postgres account can enter (the
// test may run as root); kept, and named, when the test fails.
func workDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "oncecall-chaos-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s (database, ledger and logs)", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

func TestChaosShort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipped under -short: the chaos run takes about a minute (make chaos runs it on its own)")
	}
	rep, err := Run(t.Context(), Config{
		Duration: 30 * time.Second, Clients: 12, KillEvery: 3 * time.Second, Settle: 45 * time.Second,
		Dir: workDir(t), Out: t.Output(), Binary: buildtest.Command(t, "cmd/oncecall"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Log("problem:", p)
	}
	t.Log(rep.Details())
	t.Log(rep.String())
	if rep.Duplicates != 0 || rep.Lost != 0 || rep.FalseConfirmations != 0 || !rep.OK() {
		t.Fatalf("the audit found broken promises: %s", rep)
	}
	if rep.Kills == 0 || rep.PGRestarts != 1 {
		t.Fatalf("the run was not chaotic: %d kills, %d PostgreSQL restarts", rep.Kills, rep.PGRestarts)
	}
	if rep.Actions < 100 || rep.Confirmed < rep.Actions/2 {
		t.Fatalf("too little happened to prove anything: %d actions, %d confirmed", rep.Actions, rep.Confirmed)
	}
}

// The audit must see duplicates when there are some: with oncecall told that
// the messaging provider honours keys (it ignores them), every resend of a
// message whose answer was lost is a second message.
func TestChaosCatchesDuplicates(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipped under -short: starts a database, the simulator and three replicas")
	}
	rep, err := Run(t.Context(), Config{
		Duration: 10 * time.Second, Clients: 8, KillEvery: time.Hour, PGRestartAt: time.Hour, Settle: 20 * time.Second,
		Dir: workDir(t), Out: t.Output(), TrustMessagingKeys: true, Binary: buildtest.Command(t, "cmd/oncecall"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.String())
	if rep.Duplicates == 0 || rep.OK() {
		t.Fatalf("resends to a provider that ignores keys made no duplicate the audit saw: %s", rep)
	}
}
