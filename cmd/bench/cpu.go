package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// The share of the machine's CPU time left idle over a run's measured
// window tells whether the run was bound by CPU: the bounds the report
// prints add up what requests cost in CPU and hold for runs that leave
// (next to) no CPU idle; a run that leaves a third of it idle was waiting
// for something else (PostgreSQL's WAL flushes, say).

// cpuTimes reads the machine's CPU time from /proc/stat's first line, in
// clock ticks: all of it, and the part idle or waiting for I/O.
func cpuTimes() (total, idle uint64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, false
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, s := range fields[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return total, idle, true
}

// idleFrom starts counting the machine's idle CPU time at the time at and
// returns the function that ends the count: the idle share of the window,
// false when it could not be read or the window ended before at.
func idleFrom(at time.Time) func() (float64, bool) {
	type sample struct {
		total, idle uint64
		ok          bool
	}
	started := make(chan sample, 1)
	timer := time.AfterFunc(time.Until(at), func() {
		t, i, ok := cpuTimes()
		started <- sample{t, i, ok}
	})
	return func() (float64, bool) {
		if timer.Stop() {
			return 0, false
		}
		s := <-started
		t, i, ok := cpuTimes()
		if !s.ok || !ok || t <= s.total {
			return 0, false
		}
		return float64(i-s.idle) / float64(t-s.total), true
	}
}
