package chaos

import (
	"testing"
	"time"
)

// The failover run's last line is the documented one, and any non-zero
// count makes the run fail.
func TestFailoverReportLine(t *testing.T) {
	t.Parallel()
	r := FailoverReport{Report: Report{Actions: 12}, Failovers: 3, MaxWriteGap: 17250 * time.Millisecond}
	want := "failover: actions=12 failovers=3 duplicates=0 lost=0 false_confirmations=0 lost_confirmed=0 unresolved=0 max_write_gap_s=17.2"
	if got := r.String(); got != want {
		t.Fatalf("line:\n got %s\nwant %s", got, want)
	}
	if !r.OK() {
		t.Fatal("a run with every count zero is not OK")
	}
	for name, broken := range map[string]func(*FailoverReport){
		"duplicates":          func(r *FailoverReport) { r.Duplicates = 1 },
		"lost":                func(r *FailoverReport) { r.Lost = 1 },
		"false_confirmations": func(r *FailoverReport) { r.FalseConfirmations = 1 },
		"lost_confirmed":      func(r *FailoverReport) { r.LostConfirmed = 1 },
		"unresolved":          func(r *FailoverReport) { r.Unresolved = 1 },
		"replica_exits":       func(r *FailoverReport) { r.ReplicaExits = 1 },
		"protocol_errors":     func(r *FailoverReport) { r.ProtocolErrors = 1 },
	} {
		b := r
		broken(&b)
		if b.OK() {
			t.Errorf("a run with %s is OK", name)
		}
	}
}
