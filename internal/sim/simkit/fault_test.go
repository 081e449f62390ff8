package simkit

import (
	"testing"
	"time"
)

func TestParseFaults(t *testing.T) {
	t.Parallel()
	f, err := ParseFaults("drop_response; delay=250ms;lookup_lag=2s;collision_undetected")
	if err != nil || !f.Drop || f.Delay != 250*time.Millisecond || f.LookupLag != 2*time.Second || !f.Collision {
		t.Fatalf("ParseFaults = %+v, %v", f, err)
	}
	for _, bad := range []string{"explode", "delay", "drop_response=1", "delay=2h", "lookup_lag=-1s"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q) accepted", bad)
		}
	}
}

func TestRulesApplyToTheirKindAndCount(t *testing.T) {
	t.Parallel()
	var rs Rules
	if _, err := rs.Add(Rule{Fault: "drop_response", Count: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Add(Rule{Fault: "lookup_lag=1s"}); err != nil {
		t.Fatal(err)
	}
	if f := rs.Take(OnRead); f.Drop || f.LookupLag != time.Second {
		t.Errorf("a read got %+v", f)
	}
	for i := range 2 {
		if f := rs.Take(OnWrite); !f.Drop {
			t.Errorf("write %d did not get drop_response", i)
		}
	}
	if f := rs.Take(OnWrite); f.Drop {
		t.Error("a third write got drop_response")
	}
	if n := len(rs.All()); n != 1 {
		t.Errorf("%d rules left, want the lag", n)
	}
	for _, bad := range []Rule{{Fault: "down;drop_response"}, {Fault: "down", On: "sometimes"}, {Fault: "down", Count: -1}} {
		if _, err := rs.Add(bad); err == nil {
			t.Errorf("rule %+v accepted", bad)
		}
	}
}
