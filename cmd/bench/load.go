package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
)

// worker is one client of a run. A run's op calls observe once per request
// it made; only requests started after the warm-up are measured.
type worker struct {
	id          int
	measureFrom time.Time
	lat         []uint32 // microseconds
	errs        int
}

// observe records one request that started at start and took d.
func (w *worker) observe(start time.Time, d time.Duration, ok bool) {
	if start.Before(w.measureFrom) {
		return
	}
	w.lat = append(w.lat, uint32(min(d/time.Microsecond, 1<<32-1)))
	if !ok {
		w.errs++
	}
}

// stats is what a run measured.
type stats struct {
	requests int
	errors   int
	elapsed  time.Duration
	rps      float64
	p50, p99 time.Duration
	// stoppedEarly: a worker ran out of prepared slots before the deadline.
	stoppedEarly bool
	// walBytes is the WAL PostgreSQL wrote per measured request (the whole
	// server's, over the measured window); walOK is false when it could not
	// be read.
	walBytes float64
	walOK    bool
	// allocs and allocBytes are the heap allocations oncecall made per
	// request it answered over the run, warm-up included (its /metrics, see
	// allocs.go); allocOK is false when they could not be read or the run's
	// requests went to another server.
	allocs, allocBytes float64
	allocOK            bool
	// idle is the share of the machine's CPU time left idle (or waiting
	// for I/O) over the measured window, steal the share the hypervisor
	// gave to other guests; idleOK is false when they could not be read.
	idle, steal float64
	idleOK      bool
	// cpu is the CPU time per measured request in microseconds, by part
	// (see cpu.go), with "other" and "total"; nil when it could not be read.
	cpu map[string]float64
}

// load runs op from n workers until warmup+measure have passed. op performs
// one unit of work (usually one request) and returns false when the worker
// must stop early. No request is cancelled at the deadline: a request
// abandoned mid-flight would leave an effect whose answer nobody saw, and
// the effect count after the run must match the answers exactly. Cancelling
// ctx (Ctrl-C) only stops workers from starting more work.
func load(ctx context.Context, n int, warmup, measure time.Duration, profile string, parts []part, op func(w *worker) bool) (stats, error) {
	start := time.Now()
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(measure)
	workers := make([]*worker, n)
	stopped := make([]bool, n)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{id: i, measureFrom: measureFrom, lat: make([]uint32, 0, 4096)}
		workers[i] = w
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				if !op(w) {
					stopped[w.id] = true
					return
				}
			}
		})
	}
	stopProfile, err := profileFrom(measureFrom, profile)
	if err != nil {
		return stats{}, err
	}
	stopCPU := cpuFrom(measureFrom, parts)
	wg.Wait()
	finished := time.Now()
	use, useOK := stopCPU()
	if err := stopProfile(); err != nil {
		return stats{}, err
	}

	s := stats{idle: use.idle, steal: use.steal, idleOK: useOK}
	var all []uint32
	for i, w := range workers {
		all = append(all, w.lat...)
		s.errors += w.errs
		s.stoppedEarly = s.stoppedEarly || stopped[i]
	}
	s.requests = len(all)
	if useOK {
		s.cpu = use.perRequest(s.requests)
	}
	s.elapsed = finished.Sub(measureFrom)
	if s.elapsed > 0 {
		s.rps = float64(s.requests) / s.elapsed.Seconds()
	}
	slices.Sort(all)
	s.p50 = percentile(all, 0.50)
	s.p99 = percentile(all, 0.99)
	return s, nil
}

// percentile returns the q-quantile of sorted microsecond latencies by the
// nearest-rank method.
func percentile(sorted []uint32, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted))+0.999999) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return time.Duration(sorted[rank]) * time.Microsecond
}

// profileFrom starts a CPU profile into path at the time at (after the
// warm-up) and returns the function that stops it. An empty path profiles
// nothing.
func profileFrom(at time.Time, path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	started := make(chan error, 1)
	timer := time.AfterFunc(time.Until(at), func() { started <- pprof.StartCPUProfile(f) })
	return func() error {
		if timer.Stop() {
			// The run ended before its warm-up did: nothing was measured.
			return f.Close()
		}
		err := <-started
		if err == nil {
			pprof.StopCPUProfile()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		return nil
	}, nil
}
