package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What a run cost in CPU. The share of the machine's CPU time left idle
// over a run's measured window tells whether the run was bound by CPU: the
// bounds the report prints add up what requests cost in CPU and hold for
// runs that leave (next to) no CPU idle; a run that leaves a third of it
// idle was waiting for something else (PostgreSQL's WAL flushes, say).
// On a virtual machine the share the hypervisor gave to other guests while
// this one had work (steal) is the machine's speed moving under the run: it
// is reported beside idle and counts as neither idle nor busy.
// The CPU time each process of the run used over the same window, divided
// by the requests measured, says where a request's cost went: the load
// generator (this process, with the SQL-only scenarios' pgx side and, with
// --server inprocess, the servers), oncecall serve, the baseline server,
// PostgreSQL (the postmaster and its children), and the rest of the
// machine (the kernel's threads, other work). A request's CPU time moves
// less with the machine's speed than a request rate does: another
// program's load takes cores away but does not make a request cost more.

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// part is a process whose CPU time the bench accounts for per request.
type part struct {
	name string
	pid  int
	// tree: the process's children count too (PostgreSQL's backends);
	// children that ended in the window count through the parent's
	// cutime and cstime.
	tree bool
}

// cpuSample is the machine's CPU time and each part's, in clock ticks.
type cpuSample struct {
	cpuTimes
	parts []uint64
	ok    bool
}

func sampleCPU(parts []part) cpuSample {
	var s cpuSample
	s.cpuTimes, s.ok = readCPUTimes()
	if !s.ok {
		return s
	}
	var children map[int]uint64
	if slices.ContainsFunc(parts, func(p part) bool { return p.tree }) {
		children = childTimes()
	}
	s.parts = make([]uint64, len(parts))
	for i, p := range parts {
		st, ok := procStat(p.pid)
		if !ok {
			continue
		}
		s.parts[i] = st.utime + st.stime
		if p.tree {
			s.parts[i] += st.cutime + st.cstime + children[p.pid]
		}
	}
	return s
}

// cpuTimes is the machine's CPU time in clock ticks: all of it, the part
// idle or waiting for I/O, and the part stolen by the hypervisor.
type cpuTimes struct{ total, idle, steal uint64 }

// readCPUTimes reads the machine's CPU time from /proc/stat's first line.
func readCPUTimes() (cpuTimes, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return cpuTimes{}, false
	}
	return parseCPUTimes(sc.Text())
}

// parseCPUTimes reads /proc/stat's "cpu" line: user, nice, system, idle,
// iowait, irq, softirq, steal, then guest and guest_nice, which user and
// nice already count (older kernels stop sooner).
func parseCPUTimes(line string) (cpuTimes, bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, s := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		t.total += v
		switch i {
		case 3, 4: // idle, iowait
			t.idle += v
		case 7:
			t.steal = v
		}
	}
	return t, true
}

// stat is what the bench reads of /proc/<pid>/stat.
type stat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime uint64
}

func procStat(pid int) (stat, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	return parseStat(string(data))
}

// parseStat parses a /proc/<pid>/stat line; the command name, in
// parentheses, may itself hold spaces and parentheses.
func parseStat(line string) (stat, bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	f := strings.Fields(line[end+1:])
	if len(f) < 15 {
		return stat{}, false
	}
	st := stat{comm: line[open+1 : end]}
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return stat{}, false
	}
	for i, v := range []*uint64{&st.utime, &st.stime, &st.cutime, &st.cstime} {
		n, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return stat{}, false
		}
		*v = uint64(max(n, 0))
	}
	return st, true
}

// childTimes sums each process's living children's CPU time, by parent.
func childTimes() map[int]uint64 {
	out := map[int]uint64{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok {
			out[st.ppid] += st.utime + st.stime
		}
	}
	return out
}

// cpuUse is what the machine's CPU did over a measured window.
type cpuUse struct {
	// idle is the share of the machine's CPU time left idle or waiting
	// for I/O, steal the share the hypervisor gave to other guests.
	idle, steal float64
	// busy is the CPU time the machine spent, and parts each part's, in
	// clock ticks.
	busy  uint64
	parts map[string]uint64
}

// cpuFrom starts counting CPU time at the time at and returns the function
// that ends the count: false when it could not be read or the window ended
// before at.
func cpuFrom(at time.Time, parts []part) func() (cpuUse, bool) {
	started := make(chan cpuSample, 1)
	timer := time.AfterFunc(time.Until(at), func() { started <- sampleCPU(parts) })
	return func() (cpuUse, bool) {
		if timer.Stop() {
			return cpuUse{}, false
		}
		s := <-started
		e := sampleCPU(parts)
		if !s.ok || !e.ok || e.total <= s.total {
			return cpuUse{}, false
		}
		total, idle, steal := e.total-s.total, e.idle-min(s.idle, e.idle), e.steal-min(s.steal, e.steal)
		u := cpuUse{
			idle:  float64(idle) / float64(total),
			steal: float64(steal) / float64(total),
			busy:  total - min(idle+steal, total),
			parts: map[string]uint64{},
		}
		for i, p := range parts {
			u.parts[p.name] += e.parts[i] - min(s.parts[i], e.parts[i])
		}
		return u, true
	}
}

// perRequest turns a window's CPU use into microseconds of CPU time per
// request: each part's, "other" (the machine's busy time no part used) and
// "total" (the machine's busy time).
func (u cpuUse) perRequest(requests int) map[string]float64 {
	if requests <= 0 {
		return nil
	}
	us := func(ticks uint64) float64 {
		return float64(ticks) * float64(clockTick/time.Microsecond) / float64(requests)
	}
	out := map[string]float64{"total": us(u.busy)}
	var used uint64
	for name, t := range u.parts {
		out[name] = us(t)
		used += t
	}
	out["other"] = us(u.busy - min(used, u.busy))
	return out
}
