package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// How a model's tool call reaches oncecall: the platform's delivery, its
// retries, the copies platforms send, and the requests in flight that tell
// a lockout.

// callRunner is what every call's model shares: where oncecall is, the
// HTTP client, the tracker of requests in flight, the counters.
type callRunner struct {
	seed uint64
	// base returns the URL of a live oncecall (a random replica), or "";
	// live, when set, whether a replica's URL is still served.
	base func() string
	live func(url string) bool
	hc   *http.Client
	// turn is the pause between the caller's turns; statusEvery between
	// two status checks; statusFor the longest a model keeps checking.
	turn, statusEvery, statusFor time.Duration
	// outage reports whether a time is within the database's outage (a 503
	// then is not a lockout).
	outage func(time.Time) bool

	// fed is closed once every call has been handed to a player.
	fed chan struct{}

	flight    inflight
	toolCalls atomic.Int64
	answers   [4]atomic.Int64 // by platform, in callPlatforms' order
	lockouts  atomic.Int64
}

// inflight tracks the requests in flight per tenant, to tell a lockout (a
// 503 while another call of the tenant is slow) from an outage.
type inflight struct {
	mu   sync.Mutex
	seq  int64
	reqs map[int]map[int64]flight // tenant -> request -> what
}

type flight struct {
	call  int
	start time.Time
}

// slowRequest is how long another call's request must have been in flight
// for a 503 to count as a lockout: the tenant gate's wait.
const slowRequest = time.Second

func (f *inflight) begin(tenant, call int) (end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reqs == nil {
		f.reqs = map[int]map[int64]flight{}
	}
	if f.reqs[tenant] == nil {
		f.reqs[tenant] = map[int64]flight{}
	}
	f.seq++
	id := f.seq
	f.reqs[tenant][id] = flight{call: call, start: time.Now()}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.reqs[tenant], id)
	}
}

// slowOther reports whether another call of tenant has a request in flight
// since before at minus slowRequest.
func (f *inflight) slowOther(tenant, call int, at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.reqs[tenant] {
		if r.call != call && at.Sub(r.start) >= slowRequest {
			return true
		}
	}
	return false
}

// once is one tool call by the model: the platform's delivery with its
// retries. Now and then the platform delivers it twice, the model is
// interrupted and loses the result (nil), or, on Vapi, the model emits the
// same call twice in one message. It returns the answer the model acts on.
func (m *callModel) once(ctx context.Context, intent int, rng *rand.Rand, step, tool string, args ordered) *voiceAnswer {
	body, _ := json.Marshal(args) // strings, numbers and maps of strings: cannot fail
	calls := []toolCall{{ID: "call_" + hexOf(rng, 12), Tool: tool, Args: body}}
	switch m.c.Platform {
	case platVapi:
		calls[0].Flat = rng.IntN(3) == 0
		if !readOnlyTool(tool) && rng.IntN(25) == 0 {
			// The same function twice in one message.
			calls = append(calls, toolCall{ID: "call_" + hexOf(rng, 12), Tool: tool, Args: body, Flat: calls[0].Flat})
		}
	case platDasha:
		calls[0].AsString = rng.IntN(10) == 0
	}
	d, err := m.c.deliver(calls, rng)
	if err != nil {
		m.record(&callEvent{At: time.Now(), Intent: intent, Step: step, Tool: tool, Args: body, Err: err.Error()})
		return nil
	}
	var cut time.Duration
	if !readOnlyTool(tool) && rng.IntN(16) == 0 {
		cut = time.Duration(20+rng.IntN(700)) * time.Millisecond // interrupted: the result is lost
	}
	// The platform delivers the same request more than once now and then:
	// a second time, or, rarely, a burst of them (a retry storm). An
	// impatient caller's platform sends it again while the answer is
	// slow. Copies of one request go to the replica the first went to (a
	// client's connections to one backend).
	pin := m.r.base()
	extra := 0
	switch {
	case !readOnlyTool(tool) && rng.IntN(30) == 0:
		extra = 4 + rng.IntN(6)
	case rng.IntN(16) == 0:
		extra = 1
	}
	// Each copy is sent by a goroutine of its own, with its own random
	// source and its own copy of the request, both made here: the first
	// delivery goes on using rng and signing d's header meanwhile.
	var twins sync.WaitGroup
	again := func(src *rand.Rand, from delivery, i int, delay time.Duration, what string) {
		trng, td := rand.New(rand.NewPCG(src.Uint64(), src.Uint64())), from.clone()
		twins.Go(func() {
			if sleep(ctx, delay) {
				m.deliverWithRetries(ctx, intent, trng, fmt.Sprintf("%s (%s, %d)", step, what, i+1), calls, td, 0, pin)
			}
		})
	}
	for i := range extra {
		again(rng, d, i, time.Duration(rng.IntN(200))*time.Millisecond, "delivered again")
	}
	answered := make(chan struct{})
	if m.c.Impatient && !readOnlyTool(tool) {
		// The impatient caller's resends draw from a source of their own
		// and copy a request of their own, both taken before they start.
		irng, ireq := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), d.clone()
		twins.Go(func() {
			for i := range 6 {
				wait := time.Second
				if i > 0 {
					wait = 250 * time.Millisecond
				}
				select {
				case <-answered:
					return
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				again(irng, ireq, i, 0, "sent again while the answer is slow")
			}
		})
	}
	answers := m.deliverWithRetries(ctx, intent, rng, step, calls, d, cut, pin)
	close(answered)
	twins.Wait()
	if answers == nil {
		return nil
	}
	return answers[0]
}

// deliverWithRetries sends d as the platform does: again after a 5xx, a
// timeout or a cut connection, as often as the platform retries; then the
// platform's fallback, or nothing. cut > 0 interrupts the first attempt.
//
// The first attempt goes to pin, a replica's URL (when it is still up);
// the platform's retries to any.
func (m *callModel) deliverWithRetries(ctx context.Context, intent int, rng *rand.Rand, step string, calls []toolCall, d delivery, cut time.Duration, pin string) []*voiceAnswer {
	pol := policies[m.c.Platform]
	for attempt := 0; attempt <= pol.Retries && ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			sleep(ctx, time.Duration(100+rng.IntN(400))*time.Millisecond)
			if m.c.Platform == platRetell {
				// Retell signs each delivery.
				d.Header.Set("X-Retell-Signature", retellSignature(d.Body, m.c.Tenant.RetellKey, time.Now()))
			}
		}
		e := &callEvent{At: time.Now(), Intent: intent, Step: step, Tool: calls[0].Tool, ToolCallID: calls[0].ID, Args: calls[0].Args}
		if attempt > 0 {
			e.Step += fmt.Sprintf(" (platform retry %d)", attempt)
		}
		if attempt > 0 {
			pin = ""
		}
		status, body, err := m.post(ctx, d, pol.Timeout, cut, pin)
		e.Took, e.Status = time.Since(e.At), status
		m.r.toolCalls.Add(int64(len(calls)))
		if cut > 0 && err != nil {
			e.Err = "interrupted: the model lost the result"
			m.record(e)
			return nil
		}
		switch {
		case err != nil:
			e.Err = err.Error()
			m.record(e)
			continue
		case status >= 500:
			e.Err = snippet(body)
			if status == http.StatusServiceUnavailable && bytes.Contains(body, []byte("this tenant")) &&
				m.r.flight.slowOther(m.c.Tenant.N, m.c.N, e.At) && (m.r.outage == nil || !m.r.outage(e.At)) {
				e.Lockout = true
				m.r.lockouts.Add(1)
			}
			m.record(e)
			continue
		case status != http.StatusOK:
			e.Err = snippet(body)
			m.record(e)
			return nil
		}
		answers, err := decodeAnswers(m.c.Platform, body, calls)
		if err != nil {
			e.Err = err.Error() + ": " + snippet(body)
			m.record(e)
			return nil
		}
		m.r.answers[platformIndex(m.c.Platform)].Add(int64(len(answers)))
		e.Answer = answers[0]
		m.record(e)
		for i, a := range answers[1:] {
			m.record(&callEvent{At: e.At, Took: e.Took, Intent: intent, Step: step + " (the same call twice in one message)",
				Tool: calls[i+1].Tool, ToolCallID: calls[i+1].ID, Args: calls[i+1].Args, Status: status, Answer: a})
		}
		return answers
	}
	if pol.Fallback && ctx.Err() == nil {
		a := fallbackAnswer()
		m.record(&callEvent{At: time.Now(), Intent: intent, Step: step + " (the platform's fallback)", Tool: calls[0].Tool, Answer: a})
		return []*voiceAnswer{a}
	}
	return nil
}

// post sends d to pin, or to a live replica, within timeout; cut > 0
// abandons it after cut (an interrupted model).
func (m *callModel) post(ctx context.Context, d delivery, timeout, cut time.Duration, pin string) (int, []byte, error) {
	base := pin
	if base == "" || (m.r.live != nil && !m.r.live(base)) {
		base = m.r.base()
	}
	if base == "" {
		return 0, nil, errNoReplica
	}
	if cut > 0 && cut < timeout {
		timeout = cut
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, base+d.Path, bytes.NewReader(d.Body))
	if err != nil {
		return 0, nil, err
	}
	req.Header = d.Header.Clone()
	end := m.r.flight.begin(m.c.Tenant.N, m.c.N)
	defer end()
	resp, err := m.r.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}
