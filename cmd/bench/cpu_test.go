package main

import (
	"maps"
	"os"
	"slices"
	"testing"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	// A command name may hold spaces and parentheses; the fields after it
	// are state, ppid, ..., utime (14th field), stime, cutime, cstime.
	line := "4242 (post (gres) x) S 17 4242 4242 0 -1 4194560 900 0 0 0 1234 567 89 10 20 0 1 0 100 0 0\n"
	st, ok := parseStat(line)
	if !ok {
		t.Fatal("parseStat refused a stat line")
	}
	want := stat{comm: "post (gres) x", ppid: 17, utime: 1234, stime: 567, cutime: 89, cstime: 10}
	if st != want {
		t.Errorf("parseStat = %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "4242 no parentheses S 1 2 3", "4242 (x) S 17 1 2"} {
		if _, ok := parseStat(bad); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
	// This process's own line parses and names this test binary.
	self, ok := procStat(os.Getpid())
	if !ok || self.ppid <= 0 || self.comm == "" {
		t.Errorf("procStat(self) = %+v, %v", self, ok)
	}
}

func TestParseCPUTimes(t *testing.T) {
	t.Parallel()
	// user nice system idle iowait irq softirq steal guest guest_nice: the
	// guest times are in user and nice already and count once.
	got, ok := parseCPUTimes("cpu  100 5 40 800 20 3 2 30 50 1")
	if want := (cpuTimes{total: 1000, idle: 820, steal: 30}); !ok || got != want {
		t.Errorf("parseCPUTimes = %+v %v, want %+v", got, ok, want)
	}
	// An older kernel's line without steal.
	if got, ok := parseCPUTimes("cpu 100 0 50 800 50"); !ok || got != (cpuTimes{total: 1000, idle: 850}) {
		t.Errorf("parseCPUTimes without steal = %+v %v", got, ok)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5", "cpu 1 2 x 4 5", "cpu 1 2 3"} {
		if _, ok := parseCPUTimes(bad); ok {
			t.Errorf("parseCPUTimes(%q) accepted", bad)
		}
	}
	if _, ok := readCPUTimes(); !ok {
		t.Error("this machine's /proc/stat did not parse")
	}
}

func TestCPUPerRequest(t *testing.T) {
	t.Parallel()
	// 300 ticks busy over 1,000 requests: 3,000 µs a request; the parts
	// used 250 of them, the rest is other.
	u := cpuUse{busy: 300, parts: map[string]uint64{"client": 50, "postgres": 200}}
	got := u.perRequest(1000)
	want := map[string]float64{"total": 3000, "client": 500, "postgres": 2000, "other": 500}
	if !maps.Equal(got, want) {
		t.Errorf("perRequest = %v, want %v", got, want)
	}
	// Parts can add up to more than the machine's count when the samples
	// straddle a tick: other is then nothing rather than negative.
	if got := (cpuUse{busy: 10, parts: map[string]uint64{"client": 12}}).perRequest(1); got["other"] != 0 {
		t.Errorf("other = %v, want 0", got["other"])
	}
	if got := u.perRequest(0); got != nil {
		t.Errorf("perRequest(0) = %v, want nil", got)
	}
	if got := cpuColumns(want); !slices.Equal(got, []string{"client", "postgres", "other", "total"}) {
		t.Errorf("cpuColumns = %v", got)
	}
}
