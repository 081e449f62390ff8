package db

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// goroutineID is the calling goroutine's number, from its stack's first
// line ("goroutine 7 [running]:").
func goroutineID(t *testing.T) int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf)
	if len(f) < 2 {
		t.Fatalf("stack header %q", buf)
	}
	id, err := strconv.Atoi(string(f[1]))
	if err != nil {
		t.Fatalf("stack header %q: %v", buf, err)
	}
	return id
}

// A detached commit runs on a goroutine kept from an earlier one when one
// is waiting: one after the other, a hundred commits run on a few
// goroutines, not on a hundred new ones whose stacks each grow again.
func TestDetachedCommitsReuseTheirGoroutines(t *testing.T) {
	r := newRunners(time.Minute)
	seen := map[int]bool{}
	for range 100 {
		ran := make(chan int)
		r.run(func() { ran <- goroutineID(t) })
		seen[<-ran] = true
	}
	if len(seen) > 10 {
		t.Fatalf("100 commits one after the other ran on %d goroutines, want at most 10", len(seen))
	}
}

// Commits at the same time each get a goroutine: none waits for another.
func TestDetachedCommitsRunSideBySide(t *testing.T) {
	r := newRunners(time.Minute)
	const n = 8
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	done := make(chan struct{}, n)
	for range n {
		r.run(func() {
			started.Done()
			<-release
			done <- struct{}{}
		})
	}
	waited := make(chan struct{})
	go func() { started.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d commits at the same time did not all start", n)
	}
	close(release)
	for range n {
		<-done
	}
}

// A kept goroutine that waited runnerIdle for a commit ends.
func TestIdleCommitGoroutinesEnd(t *testing.T) {
	before := runtime.NumGoroutine()
	r := newRunners(10 * time.Millisecond)
	ran := make(chan struct{})
	r.run(func() { close(ran) })
	<-ran
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d goroutines 10 s after the commit, %d before it", runtime.NumGoroutine(), before)
		}
	}
}
