package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
)

// The overload scenario sends first executions (first's request) at twice
// the rate the machine serves: the rate is measured just before, at the
// run's concurrency, and the requests then arrive on a clock (open loop),
// not when an answer comes back, as calls arrive at a service. The server
// admits what its pool can serve within its --db-wait and refuses the rest
// with 503 and Retry-After. Then the load falls back to the run's
// concurrency of closed-loop clients, and every refused request is sent
// again with its key.
//
// In order, with no VACUUM or CHECKPOINT between them:
//
//  1. capacity: first executions from c clients, closed loop, for half
//     the duration after the warm-up: the capacity's rate;
//  2. overload: arrivals at twice that rate for the warm-up and the
//     duration, each a fresh key and slot; measured, those sent after the
//     warm-up: admitted (201) latency and rate, refusals (503 with
//     Retry-After) and their latency;
//  3. recovery: c clients, closed loop, for half the duration, measured
//     from the moment the arrivals stop: recovery is its rate over the
//     capacity's;
//  4. retries: every refused request sent again with its key and body by
//     c clients: each must be a first execution (a 201 not replayed),
//     since its refusal stored nothing.
//
// The effect count after the run covers all four: one appointment and one
// action per 201, none per refusal.

// maxInFlight bounds the overload phase's requests in flight; an arrival
// due while that many are unanswered is not sent (counted as dropped).
const maxInFlight = 1000

// overloadFigures is what an overload run measured besides its admitted
// requests' rate and latency (the run's stats).
type overloadFigures struct {
	CapacityRPS  float64 `json:"capacity_rps"`
	OfferedRPS   float64 `json:"offered_rps"`
	AdmittedRPS  float64 `json:"admitted_rps"`
	AdmittedP99  float64 `json:"admitted_p99_ms"`
	RefusedShare float64 `json:"refused_share"`
	RefusalP50   float64 `json:"refusal_p50_ms"`
	RefusalP99   float64 `json:"refusal_p99_ms"`
	// Recovery is the recovery phase's rate over the capacity's.
	Recovery float64 `json:"recovery"`
	// Retried is how many refused requests were sent again; RetriedFirst
	// how many of them were answered as first executions (all, or an
	// answer was false), RetryRounds how many passes that took.
	Retried      int `json:"retried"`
	RetriedFirst int `json:"retried_first"`
	RetryRounds  int `json:"retry_rounds"`
	// Dropped arrivals were due while maxInFlight requests were unanswered.
	Dropped int `json:"dropped"`
}

func (o *overloadFigures) line() string {
	return fmt.Sprintf("capacity %.0f req/s, offered %.0f req/s: admitted %.0f req/s p99 %.2f ms, refused %.0f%% in p50 %.2f / p99 %.2f ms, "+
		"recovery %.2f of capacity, refused sent again %d (%d first executions, %d passes), dropped %d",
		o.CapacityRPS, o.OfferedRPS, o.AdmittedRPS, o.AdmittedP99, 100*o.RefusedShare, o.RefusalP50, o.RefusalP99,
		o.Recovery, o.Retried, o.RetriedFirst, o.RetryRounds, o.Dropped)
}

func (b *bench) runOverload(ctx context.Context, c int) (result, error) {
	f, err := b.newTenant(ctx, b.tenantName("overload", c))
	if err != nil {
		return result{}, err
	}
	if err := b.addSlots(ctx, f, 3*b.slotsPerRun()); err != nil {
		return result{}, err
	}
	tenants := []uuid.UUID{f.tenant}
	if err := b.settle(ctx); err != nil {
		return result{}, err
	}
	before, err := b.effects(ctx, tenants)
	if err != nil {
		return result{}, err
	}
	url := b.base + "/v1/appointments"
	var t tally
	var o overloadFigures

	// fresh books a fresh slot under a fresh key, closed loop.
	fresh := func(w *worker) bool {
		slot, customer, ok := f.take()
		if !ok {
			return false
		}
		start := time.Now()
		a := b.post(url, f.apiKey, uuid.NewString(), bookBody(customer, slot), false)
		d := time.Since(start)
		first := a.err == nil && a.status == http.StatusCreated && !a.replayed
		t.count(a, first)
		if !first {
			t.unexpected(a)
		}
		w.observe(start, d, first)
		return true
	}

	// 1. capacity.
	capacity, err := load(ctx, c, b.warmup, b.cfg.duration/2, "", b.parts, fresh)
	if err != nil {
		return result{}, err
	}
	capacityRPS := served(capacity)
	o.CapacityRPS = round(capacityRPS, 1)
	rate := 2 * capacityRPS
	o.OfferedRPS = round(rate, 1)

	// 2. overload, open loop.
	var (
		mu                  sync.Mutex
		admitted, refusals  []uint32 // microseconds, of the measured arrivals
		refused             []sentBooking
		measuredSent, wrong int
		wg                  sync.WaitGroup
	)
	inFlight := make(chan struct{}, maxInFlight)
	heapFrom, heapErr := heapCounts(ctx, b.client, b.base)
	start := time.Now()
	measureFrom := start.Add(b.warmup)
	end := measureFrom.Add(b.cfg.duration)
	var walFrom int64
	var walFromErr error
	walRead := make(chan struct{})
	walTimer := time.AfterFunc(b.warmup, func() { walFrom, walFromErr = b.walPosition(ctx); close(walRead) })
	stopCPU := cpuFrom(measureFrom, b.parts)
	stopped := false
	for sent := 0; !stopped && ctx.Err() == nil; {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		for due := int(now.Sub(start).Seconds() * rate); sent < due; sent++ {
			slot, customer, ok := f.take()
			if !ok {
				stopped = true
				break
			}
			select {
			case inFlight <- struct{}{}:
			default:
				o.Dropped++
				continue
			}
			measured := !now.Before(measureFrom)
			if measured {
				measuredSent++
			}
			wg.Go(func() {
				defer func() { <-inFlight }()
				key, body := uuid.New(), bookBody(customer, slot)
				s := time.Now()
				a := b.post(url, f.apiKey, key.String(), body, false)
				d := uint32(min(time.Since(s)/time.Microsecond, 1<<32-1))
				first := a.err == nil && a.status == http.StatusCreated && !a.replayed
				t.count(a, first)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case first:
					if measured {
						admitted = append(admitted, d)
					}
				case a.err == nil && a.status == http.StatusServiceUnavailable && a.retryAfter != "":
					refused = append(refused, sentBooking{f: f, key: key, customer: customer, slot: slot})
					if measured {
						refusals = append(refusals, d)
					}
				default:
					wrong++
					t.unexpected(a)
				}
			})
		}
		time.Sleep(time.Millisecond) // the arrivals' clock
	}
	arrivalsEnd := time.Now()
	use, useOK := stopCPU()
	if !walTimer.Stop() {
		<-walRead
	} else {
		walFromErr = context.Canceled // stopped before the warm-up ended
	}
	walTo, walToErr := b.walPosition(ctx)
	heapTo, heapToErr := heapCounts(ctx, b.client, b.base)
	// 3. recovery, from the moment the arrivals stop (the last requests
	// sent are still answered meanwhile).
	recovery, err := load(ctx, c, 0, b.cfg.duration/2, "", b.parts, fresh)
	if err != nil {
		return result{}, err
	}
	wg.Wait()
	if capacityRPS > 0 {
		o.Recovery = round(served(recovery)/capacityRPS, 3)
	}

	slices.Sort(admitted)
	slices.Sort(refusals)
	window := arrivalsEnd.Sub(measureFrom)
	st := stats{requests: len(admitted), errors: wrong, elapsed: window, stoppedEarly: stopped,
		p50: percentile(admitted, 0.50), p99: percentile(admitted, 0.99)}
	if window > 0 {
		st.rps = float64(len(admitted)) / window.Seconds()
	}
	// WAL, CPU and allocations over the measured arrivals, per admitted
	// request (the refusals' cost included).
	if walFromErr == nil && walToErr == nil && len(admitted) > 0 {
		st.walBytes, st.walOK = float64(walTo-walFrom)/float64(len(admitted)), true
	}
	st.idle, st.steal, st.idleOK = use.idle, use.steal, useOK
	if useOK {
		st.cpu = use.perRequest(len(admitted))
	}
	if heapErr == nil && heapToErr == nil {
		st.allocs, st.allocBytes, st.allocOK = heapTo.perRequest(heapFrom)
	}
	o.AdmittedRPS, o.AdmittedP99 = round(st.rps, 1), ms(st.p99)
	if measuredSent > 0 {
		o.RefusedShare = round(float64(len(refusals))/float64(measuredSent), 3)
	}
	o.RefusalP50, o.RefusalP99 = ms(percentile(refusals, 0.50)), ms(percentile(refusals, 0.99))

	// 4. every refused request again, with its key, until none is refused.
	o.Retried = len(refused)
	var replayedRefusals atomic.Int64
	for pending := refused; len(pending) > 0 && ctx.Err() == nil; {
		o.RetryRounds++
		var next atomic.Int64
		var again []sentBooking
		var rw sync.WaitGroup
		for range c {
			rw.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(len(pending)) {
						return
					}
					s := pending[i]
					a := b.post(url, f.apiKey, s.key.String(), bookBody(s.customer, s.slot), false)
					first := a.err == nil && a.status == http.StatusCreated && !a.replayed
					t.count(a, first)
					mu.Lock()
					switch {
					case first:
						o.RetriedFirst++
					case a.err == nil && a.status == http.StatusServiceUnavailable && a.retryAfter != "":
						again = append(again, s)
					default:
						if a.replayed {
							replayedRefusals.Add(1)
						}
						wrong++
						t.unexpected(a)
					}
					mu.Unlock()
				}
			})
		}
		rw.Wait()
		pending = again
	}
	st.errors = wrong
	if n := replayedRefusals.Load(); n > 0 {
		b.violations = append(b.violations, fmt.Sprintf("overload at %d clients: %d refused requests were answered as replays when sent again: the refusal was false", c, n))
	}
	b.maxRPS = max(b.maxRPS, capacityRPS)
	b.logf("  overload at %d clients: %s", c, o.line())
	r, err := b.finish(ctx, "overload", c, st, tenants, before, &t, true)
	r.over = &o
	return r, err
}

// reportOverload prints the overload runs' figures, the median of the
// rounds' at each concurrency.
func (b *bench) reportOverload(sums []summary) {
	var rows []summary
	for _, s := range sums {
		if s.name == "overload" && !s.skipped {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(b.stdout)
	fmt.Fprintln(b.stdout, "overload: first executions arriving at twice the rate c closed-loop clients got just before (capacity), the median of the rounds';")
	fmt.Fprintln(b.stdout, "admitted: answered 201; refused: 503 with Retry-After; recovery: c clients' rate right after, over capacity; every refused request sent again must be a first execution")
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tcapacity req/s\toffered req/s\tadmitted req/s\tadmitted p99 ms\trefused %\trefusal p50 ms\trefusal p99 ms\trecovery\tsent again\tfirst executions\t")
	for _, s := range rows {
		var fig []overloadFigures
		for _, r := range s.rounds {
			if r.over != nil {
				fig = append(fig, *r.over)
			}
		}
		med := func(get func(overloadFigures) float64) float64 { return medianBy(fig, get) }
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.0f\t%.2f\t%.1f\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\t\n", s.concurrency,
			med(func(f overloadFigures) float64 { return f.CapacityRPS }),
			med(func(f overloadFigures) float64 { return f.OfferedRPS }),
			med(func(f overloadFigures) float64 { return f.AdmittedRPS }),
			med(func(f overloadFigures) float64 { return f.AdmittedP99 }),
			100*med(func(f overloadFigures) float64 { return f.RefusedShare }),
			med(func(f overloadFigures) float64 { return f.RefusalP50 }),
			med(func(f overloadFigures) float64 { return f.RefusalP99 }),
			med(func(f overloadFigures) float64 { return f.Recovery }),
			med(func(f overloadFigures) float64 { return float64(f.Retried) }),
			med(func(f overloadFigures) float64 { return float64(f.RetriedFirst) }))
	}
	tw.Flush()
}

// served is a closed-loop run's rate of first executions: its requests
// answered as wanted a second.
func served(st stats) float64 {
	if st.elapsed <= 0 {
		return 0
	}
	return float64(st.requests-st.errors) / st.elapsed.Seconds()
}
