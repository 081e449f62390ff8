package main

import (
	"cmp"
	"slices"
	"time"
)

// The machine's speed drifts by a third within an hour, so one run of a
// scenario says little about another made minutes later. The bench runs
// rounds, each running every scenario at every concurrency in the same
// order, and reports medians: a scenario's req/s, p50 and p99 are the
// medians of its rounds', and a ratio (with its bound and its share of the
// bound) is computed within each round, from runs made minutes apart, and
// then the median is taken.

// summary is a scenario at one concurrency over every round.
type summary struct {
	name        string
	concurrency int
	rounds      []result // in round order
	// rps, p50, p99 and walBytes are the medians of the rounds that ran
	// (walBytes of those that could read it; walOK when any could).
	rps      float64
	p50, p99 time.Duration
	walBytes float64
	walOK    bool
	// allocs and allocBytes are the medians of the rounds' oncecall heap
	// allocations per request (allocOK when any could be read).
	allocs, allocBytes float64
	allocOK            bool
	// idle and steal are the medians of the rounds' idle and stolen CPU
	// shares (idleOK when any could be read).
	idle, steal float64
	idleOK      bool
	// cpu is, per part, the median of the rounds' CPU time per request
	// (of the rounds that could read it).
	cpu     map[string]float64
	errors  int  // over every round
	skipped bool // every round was skipped
}

// summaries returns a summary per scenario and concurrency, in scenarioOrder
// and then by concurrency.
func (b *bench) summaries() []summary {
	var out []summary
	index := map[[2]any]int{}
	for _, r := range b.results {
		k := [2]any{r.name, r.concurrency}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, summary{name: r.name, concurrency: r.concurrency})
		}
		out[i].rounds = append(out[i].rounds, r)
	}
	slices.SortStableFunc(out, func(x, y summary) int {
		if c := cmp.Compare(slices.Index(scenarioOrder, x.name), slices.Index(scenarioOrder, y.name)); c != 0 {
			return c
		}
		return cmp.Compare(x.concurrency, y.concurrency)
	})
	for i := range out {
		s := &out[i]
		var rps, p50, p99, wal, idle, steal, allocs, allocBytes []float64
		cpu := map[string][]float64{}
		for _, r := range s.rounds {
			s.errors += r.errors
			if r.skipped {
				continue
			}
			rps = append(rps, r.rps)
			p50 = append(p50, float64(r.p50))
			p99 = append(p99, float64(r.p99))
			if r.walOK {
				wal = append(wal, r.walBytes)
			}
			if r.allocOK {
				allocs, allocBytes = append(allocs, r.allocs), append(allocBytes, r.allocBytes)
			}
			if r.idleOK {
				idle = append(idle, r.idle)
				steal = append(steal, r.steal)
			}
			for name, v := range r.cpu {
				cpu[name] = append(cpu[name], v)
			}
		}
		s.skipped = len(rps) == 0
		s.rps = median(rps)
		s.p50, s.p99 = time.Duration(median(p50)), time.Duration(median(p99))
		s.walBytes, s.walOK = median(wal), len(wal) > 0
		s.allocs, s.allocBytes, s.allocOK = median(allocs), median(allocBytes), len(allocs) > 0
		s.idle, s.steal, s.idleOK = median(idle), median(steal), len(idle) > 0
		if len(cpu) > 0 {
			s.cpu = map[string]float64{}
			for name, v := range cpu {
				s.cpu[name] = median(v)
			}
		}
	}
	return out
}

// median is the middle value, or the mean of the two middle values; 0 for
// none.
// medianBy is the median of get over a run's figures, one per round.
func medianBy[T any](figs []T, get func(T) float64) float64 {
	v := make([]float64, len(figs))
	for i, f := range figs {
		v[i] = get(f)
	}
	return median(v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
