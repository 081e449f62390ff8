package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
)

// selectActions is how many completed actions the select scenario reads
// from (by key, round robin).
const selectActions = 20_000

// replayKeys is how many of the first executions just made (by first or
// peer at the same concurrency in the same round) replay and peer_replay
// send again at most, round robin: a retry storm of the requests just
// made, no bigger on a fast machine than 5,000 keys.
const replayKeys = 5_000

// replaySeed is how many bookings replay makes (unmeasured) when first did
// not run before it.
const replaySeed = 2_000

// sentBooking is a first execution that replay sends again.
type sentBooking struct {
	f                   *fixture
	key, customer, slot uuid.UUID
	hash                uint64 // of the first answer's body
}

// answer is what a client got back.
type answer struct {
	status   int
	replayed bool
	hash     uint64
	outcome  string // Dasha answers only
	snippet  string // the start of an error answer
	// retryAfter is a 503's Retry-After header.
	retryAfter string
	err        error
}

// tally counts what the clients of a run were told.
type tally struct {
	firsts, replays, conflicts, unknown atomic.Int64
	// dupKeys: keys that more than one client saw executed (storm).
	dupKeys atomic.Int64
	// differ: replays whose body differs from the first answer.
	differ atomic.Int64
	sample atomic.Pointer[string] // the first unexpected answer, for the log
}

// count tallies a: first says whether it was a first execution.
func (t *tally) count(a answer, first bool) {
	switch {
	case a.err != nil:
		t.unknown.Add(1)
	case first:
		t.firsts.Add(1)
	case a.replayed:
		t.replays.Add(1)
	case a.status == http.StatusConflict:
		t.conflicts.Add(1)
	}
}

// unexpected remembers the first unexpected answer of a run.
func (t *tally) unexpected(a answer) {
	s := fmt.Sprintf("HTTP %d %s", a.status, a.snippet)
	if a.err != nil {
		s = a.err.Error()
	}
	t.sample.CompareAndSwap(nil, &s)
}

var (
	seed    = maphash.MakeSeed()
	bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// post sends one JSON write. idemKey "" sends no Idempotency-Key.
func (b *bench) post(url, apiKey, idemKey string, body []byte, dasha bool) answer {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["Authorization"] = []string{"Bearer " + apiKey}
	if idemKey != "" {
		req.Header["Idempotency-Key"] = []string{idemKey}
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return answer{err: err}
	}
	a := answer{
		status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true",
		hash: maphash.Bytes(seed, buf.Bytes()),
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		a.retryAfter = resp.Header.Get("Retry-After")
	}
	if resp.StatusCode >= 400 {
		a.snippet = string(buf.Bytes()[:min(buf.Len(), 200)])
	}
	if dasha {
		var d struct {
			Outcome string `json:"outcome"`
		}
		if json.Unmarshal(buf.Bytes(), &d) == nil {
			a.outcome = d.Outcome
		}
	}
	return a
}

func bookBody(customer, slot uuid.UUID) []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"customer_id":"`...)
	b = append(b, customer.String()...)
	b = append(b, `","slot_id":"`...)
	b = append(b, slot.String()...)
	return append(b, `"}`...)
}

// dashaBody is a ToolWebHookPayload as Dasha sends it, for a fresh call.
func dashaBody(customer, slot uuid.UUID) []byte {
	return fmt.Appendf(nil, `{"type":"ToolWebHookPayload","status":"Running","callId":"call_%s",`+
		`"agentId":"agent_bench","orgId":"org_bench","toolName":"book_appointment",`+
		`"arguments":{"customer_id":"%s","slot_id":"%s"},"callAdditionalData":{},"agentAdditionalData":{}}`,
		uuid.New(), customer, slot)
}

// runSQL books slots with book, one statement or transaction per booking
// and no HTTP, as scenario name; withActions says whether each booking
// has its action (all but bare_sql's).
func (b *bench) runSQL(ctx context.Context, name string, c int, withActions bool,
	book func(ctx context.Context, tenant, customer, slot uuid.UUID) error) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName(name, c))
	if err != nil {
		return result{}, err
	}
	before, err := b.effects(ctx, []uuid.UUID{f.tenant})
	if err != nil {
		return result{}, err
	}
	var t tally
	st, err := b.load(ctx, name, c, c, func(w *worker) bool {
		slot, customer, ok := f.take()
		if !ok {
			return false
		}
		start := time.Now()
		err := book(context.Background(), f.tenant, customer, slot)
		d := time.Since(start)
		// A failed statement rolls the whole unit back: no unknown outcomes.
		if err == nil {
			t.firsts.Add(1)
		} else {
			t.unexpected(answer{err: err})
		}
		w.observe(start, d, err == nil)
		return true
	})
	if err != nil {
		return result{}, err
	}
	b.maxRPS = max(b.maxRPS, st.rps)
	return b.finish(ctx, name, c, st, []uuid.UUID{f.tenant}, before, &t, withActions)
}

// prepareSelect makes the actions select reads (runAll, before the first
// round).
func (b *bench) prepareSelect(ctx context.Context) error {
	f, err := b.newTenant(ctx, "bench-select")
	if err != nil {
		return err
	}
	if err := b.preload(ctx, f.tenant, "select", selectActions); err != nil {
		return err
	}
	if b.selectedKeys, err = b.keysOf(ctx, f.tenant); err != nil {
		return err
	}
	b.selected = f
	return nil
}

// runSelect reads actions by key. Every run reads the same actions, made
// before the first round.
func (b *bench) runSelect(ctx context.Context, c int) (result, error) {
	f, keys := b.selected, b.selectedKeys
	var next atomic.Int64
	var t tally
	st, err := b.load(ctx, "select", c, c, func(w *worker) bool {
		k := keys[(next.Add(1)-1)%int64(len(keys))]
		start := time.Now()
		_, err := b.store.ActionByKey(context.Background(), f.tenant, k)
		w.observe(start, time.Since(start), err == nil)
		if err != nil {
			t.unexpected(answer{err: err})
		}
		return true
	})
	if err != nil {
		return result{}, err
	}
	r := result{stats: st}
	if s := t.sample.Load(); s != nil {
		b.logf("  first error: %s", *s)
	}
	return r, nil
}

func (b *bench) runBare(ctx context.Context, c int) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName("bare", c))
	if err != nil {
		return result{}, err
	}
	before, err := b.effects(ctx, []uuid.UUID{f.tenant})
	if err != nil {
		return result{}, err
	}
	var t tally
	st, err := b.load(ctx, "bare", c, c, func(w *worker) bool {
		slot, customer, ok := f.take()
		if !ok {
			return false
		}
		start := time.Now()
		a := b.post(b.bareURL+"/v1/appointments", f.apiKey, "", bookBody(customer, slot), false)
		d := time.Since(start)
		ok = a.err == nil && a.status == http.StatusCreated
		t.count(a, ok)
		if !ok {
			t.unexpected(a)
		}
		w.observe(start, d, ok)
		return true
	})
	if err != nil {
		return result{}, err
	}
	b.maxRPS = max(b.maxRPS, st.rps)
	return b.finish(ctx, "bare", c, st, []uuid.UUID{f.tenant}, before, &t, false)
}

// bareSQL books slot with bare's statement (the booking's INSERT) without
// HTTP: what bare costs the database, as ceiling is for first.
func (b *bench) bareSQL(ctx context.Context, tenant, customer, slot uuid.UUID) error {
	_, booked, err := bareBook(ctx, b.store, tenant, customer, slot, "")
	if err == nil && booked != db.BookedOK {
		err = errors.New("a free slot was not booked")
	}
	return err
}

// runFloor sends bare's request to a handler on the same stack that checks
// it and answers without the database: what the HTTP request alone costs
// on this machine, client included.
func (b *bench) runFloor(ctx context.Context, c int) (result, error) {
	f, err := b.newTenant(ctx, b.tenantName("floor", c))
	if err != nil {
		return result{}, err
	}
	body := bookBody(f.customers[0], uuid.New())
	var t tally
	st, err := b.load(ctx, "floor", c, c, func(w *worker) bool {
		start := time.Now()
		a := b.post(b.bareURL+"/v1/floor", f.apiKey, "", body, false)
		d := time.Since(start)
		ok := a.err == nil && a.status == http.StatusCreated
		if !ok {
			t.unexpected(a)
		}
		w.observe(start, d, ok)
		return true
	})
	if err != nil {
		return result{}, err
	}
	if s := t.sample.Load(); s != nil {
		b.logf("  first unexpected answer: %s", *s)
	}
	return result{stats: st}, nil
}

func (b *bench) runFirst(ctx context.Context, c int) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName("first", c))
	if err != nil {
		return result{}, err
	}
	return b.httpBookings(ctx, "first", c, f, b.base+"/v1/appointments", &b.firsts, true)
}

// runStatement books with fresh keys through the baseline's statement
// route: ceiling's statement on bare's stack.
func (b *bench) runStatement(ctx context.Context, c int) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName("statement", c))
	if err != nil {
		return result{}, err
	}
	return b.httpBookings(ctx, "statement", c, f, b.bareURL+statementPath, nil, true)
}

// runPeer books with fresh keys through the peer.
func (b *bench) runPeer(ctx context.Context, c int) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName("peer", c))
	if err != nil {
		return result{}, err
	}
	return b.httpBookings(ctx, "peer", c, f, b.bareURL+peerPath, &b.peerFirsts, false)
}

// httpBookings books f's slots with fresh keys at url; record, if not nil,
// keeps the first executions for a replay scenario. withActions says
// whether each appointment has an oncecall action (not the peer's).
func (b *bench) httpBookings(ctx context.Context, name string, c int, f *fixture, url string, record *[]sentBooking, withActions bool) (result, error) {
	before, err := b.effects(ctx, []uuid.UUID{f.tenant})
	if err != nil {
		return result{}, err
	}
	var t tally
	sent := make([][]sentBooking, c)
	st, err := b.load(ctx, name, c, c, func(w *worker) bool {
		slot, customer, ok := f.take()
		if !ok {
			return false
		}
		key := uuid.New()
		start := time.Now()
		a := b.post(url, f.apiKey, key.String(), bookBody(customer, slot), false)
		d := time.Since(start)
		first := a.err == nil && a.status == http.StatusCreated && !a.replayed
		t.count(a, first)
		if !first {
			t.unexpected(a)
		} else if record != nil {
			sent[w.id] = append(sent[w.id], sentBooking{f: f, key: key, customer: customer, slot: slot, hash: a.hash})
		}
		w.observe(start, d, first)
		return true
	})
	if err != nil {
		return result{}, err
	}
	if record != nil {
		for _, s := range sent {
			*record = append(*record, s...)
		}
	}
	b.maxRPS = max(b.maxRPS, st.rps)
	return b.finish(ctx, name, c, st, []uuid.UUID{f.tenant}, before, &t, withActions)
}

func (b *bench) runReplay(ctx context.Context, c int) (result, error) {
	return b.replays(ctx, "replay", c, b.base+"/v1/appointments", &b.firsts, true)
}

func (b *bench) runPeerReplay(ctx context.Context, c int) (result, error) {
	return b.replays(ctx, "peer_replay", c, b.bareURL+peerPath, &b.peerFirsts, false)
}

// replays sends the first executions in firsts again to url, round robin,
// after making some if there are none.
func (b *bench) replays(ctx context.Context, name string, c int, url string, firsts *[]sentBooking, withActions bool) (result, error) {
	if len(*firsts) == 0 {
		if err := b.seedFirsts(ctx, name, url, firsts); err != nil {
			return result{}, err
		}
	}
	sent := *firsts
	sent = sent[max(0, len(sent)-replayKeys):]
	var tenants []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, s := range sent {
		if !seen[s.f.tenant] {
			seen[s.f.tenant] = true
			tenants = append(tenants, s.f.tenant)
		}
	}
	before, err := b.effects(ctx, tenants)
	if err != nil {
		return result{}, err
	}
	var next atomic.Int64
	var t tally
	st, err := b.load(ctx, name, c, c, func(w *worker) bool {
		s := sent[(next.Add(1)-1)%int64(len(sent))]
		start := time.Now()
		a := b.post(url, s.f.apiKey, s.key.String(), bookBody(s.customer, s.slot), false)
		d := time.Since(start)
		first := a.err == nil && a.status == http.StatusCreated && !a.replayed
		t.count(a, first)
		ok := a.err == nil && a.status == http.StatusCreated && a.replayed
		if ok && a.hash != s.hash {
			t.differ.Add(1)
			ok = false
		}
		if !ok {
			t.unexpected(a)
		}
		w.observe(start, d, ok)
		return true
	})
	if err != nil {
		return result{}, err
	}
	return b.finish(ctx, name, c, st, tenants, before, &t, withActions)
}

// seedFirsts makes bookings at url for scenario name into firsts, when the
// scenario that makes them did not run.
func (b *bench) seedFirsts(ctx context.Context, name, url string, firsts *[]sentBooking) error {
	f, err := b.newTenant(ctx, "bench-"+name+"-seed")
	if err != nil {
		return err
	}
	if err := b.addSlots(ctx, f, replaySeed); err != nil {
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed atomic.Pointer[string]
	for range 8 {
		wg.Go(func() {
			for {
				slot, customer, ok := f.take()
				if !ok {
					return
				}
				key := uuid.New()
				a := b.post(url, f.apiKey, key.String(), bookBody(customer, slot), false)
				if a.err != nil || a.status != http.StatusCreated {
					s := fmt.Sprintf("HTTP %d %v %s", a.status, a.err, a.snippet)
					failed.CompareAndSwap(nil, &s)
					return
				}
				mu.Lock()
				*firsts = append(*firsts, sentBooking{f: f, key: key, customer: customer, slot: slot, hash: a.hash})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if s := failed.Load(); s != nil {
		return fmt.Errorf("prepare bookings to replay: %s", *s)
	}
	return nil
}

func (b *bench) runStorm(ctx context.Context, c int) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName("storm", c))
	if err != nil {
		return result{}, err
	}
	before, err := b.effects(ctx, []uuid.UUID{f.tenant})
	if err != nil {
		return result{}, err
	}
	// c clients in groups of 8; each group sends one key from all its
	// clients at once, then the next key.
	size := min(c, 8)
	groups := max(1, c/size)
	var t tally
	st, err := b.load(ctx, "storm", c, groups, func(w *worker) bool {
		slot, customer, ok := f.take()
		if !ok {
			return false
		}
		key, body := uuid.NewString(), bookBody(customer, slot)
		var answers [8]answer
		var starts [8]time.Time
		var durs [8]time.Duration
		var wg sync.WaitGroup
		for i := range size {
			wg.Go(func() {
				starts[i] = time.Now()
				answers[i] = b.post(b.base+"/v1/appointments", f.apiKey, key, body, false)
				durs[i] = time.Since(starts[i])
			})
		}
		wg.Wait()
		firsts := 0
		var hash uint64
		haveHash := false
		for i, a := range answers[:size] {
			first := a.err == nil && a.status == http.StatusCreated && !a.replayed
			t.count(a, first)
			ok := a.err == nil && (a.status == http.StatusCreated || a.status == http.StatusConflict)
			if a.err == nil && a.status == http.StatusCreated {
				if first {
					firsts++
				}
				if haveHash && a.hash != hash {
					t.differ.Add(1)
					ok = false
				}
				hash, haveHash = a.hash, true
			}
			if !ok {
				t.unexpected(a)
			}
			w.observe(starts[i], durs[i], ok)
		}
		if firsts > 1 {
			t.dupKeys.Add(1)
		}
		return true
	})
	if err != nil {
		return result{}, err
	}
	return b.finish(ctx, "storm", c, st, []uuid.UUID{f.tenant}, before, &t, true)
}

func (b *bench) runDasha(ctx context.Context, c int) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName("dasha", c))
	if err != nil {
		return result{}, err
	}
	before, err := b.effects(ctx, []uuid.UUID{f.tenant})
	if err != nil {
		return result{}, err
	}
	url := b.base + "/v1/dasha/tools/book_appointment"
	// An empty object is not a valid payload: it claims nothing, but tells
	// whether the route exists.
	probe := b.post(url, f.apiKey, "", []byte(`{}`), true)
	if probe.err != nil {
		return result{}, fmt.Errorf("probe %s: %w", url, probe.err)
	}
	if probe.status == http.StatusNotFound {
		return result{skipped: true, note: "POST /v1/dasha/tools/{tool} answered 404: this oncecall has no Dasha endpoints yet"}, nil
	}
	var t tally
	st, err := b.load(ctx, "dasha", c, c, func(w *worker) bool {
		slot, customer, ok := f.take()
		if !ok {
			return false
		}
		start := time.Now()
		a := b.post(url, f.apiKey, "", dashaBody(customer, slot), true)
		d := time.Since(start)
		confirmed := a.err == nil && a.status == http.StatusOK && a.outcome == "confirmed"
		t.count(a, confirmed && !a.replayed)
		if !confirmed || a.replayed {
			t.unexpected(a)
		}
		w.observe(start, d, confirmed && !a.replayed)
		return true
	})
	if err != nil {
		return result{}, err
	}
	return b.finish(ctx, "dasha", c, st, []uuid.UUID{f.tenant}, before, &t, true)
}

// prepareGrown preloads the actions grown books among (runAll, before the
// first round).
func (b *bench) prepareGrown(ctx context.Context) error {
	g, err := b.newTenant(ctx, "bench-grown")
	if err != nil {
		return err
	}
	start := time.Now()
	b.logf("preloading %d actions", b.cfg.preload)
	if err := b.preload(ctx, g.tenant, "grown", b.cfg.preload); err != nil {
		return err
	}
	// Statistics of the big table; the vacuum and the checkpoint before
	// the run settle the rest of the load's aftermath, so that grown
	// measures a big table, not the load that made it.
	if _, err := b.pool.Exec(ctx, "ANALYZE actions"); err != nil {
		return fmt.Errorf("analyze after preload: %w", err)
	}
	b.logf("preloaded %d actions in %s", b.cfg.preload, time.Since(start).Round(time.Second))
	b.grown = g
	return nil
}

func (b *bench) runGrown(ctx context.Context, c int) (result, error) {
	f := &fixture{tenant: b.grown.tenant, apiKey: b.grown.apiKey, customers: b.grown.customers}
	if err := b.addSlots(ctx, f, b.slotsPerRun()); err != nil {
		return result{}, err
	}
	return b.httpBookings(ctx, "grown", c, f, b.base+"/v1/appointments", nil, true)
}

// finish checks a run's effects and returns its result.
func (b *bench) finish(ctx context.Context, name string, c int, st stats, tenants []uuid.UUID, before effects, t *tally, withActions bool) (result, error) {
	r := result{stats: st}
	if st.stoppedEarly {
		r.note = "ran out of prepared slots before the deadline"
	}
	after, err := b.effects(ctx, tenants)
	if err != nil {
		return result{}, err
	}
	added := after.appointments - before.appointments
	firsts, unknown := t.firsts.Load(), t.unknown.Load()
	var bad []string
	if after.perAction > 0 {
		bad = append(bad, fmt.Sprintf("%d actions with more than one appointment", after.perAction))
	}
	if after.perSlot > 0 {
		bad = append(bad, fmt.Sprintf("%d slots with more than one active appointment", after.perSlot))
	}
	if after.perKey > 0 {
		bad = append(bad, fmt.Sprintf("%d keys with more than one action", after.perKey))
	}
	if withActions && after.orphans > 0 {
		bad = append(bad, fmt.Sprintf("%d appointments without an action", after.orphans))
	}
	if n := t.dupKeys.Load(); n > 0 {
		bad = append(bad, fmt.Sprintf("%d keys answered as first executions more than once", n))
	}
	if added > firsts+unknown {
		bad = append(bad, fmt.Sprintf("%d new appointments for %d first executions (%d unanswered requests)", added, firsts, unknown))
	}
	if added < firsts {
		bad = append(bad, fmt.Sprintf("%d first executions answered but only %d new appointments", firsts, added))
	}
	verdict := "ok"
	if len(bad) > 0 {
		verdict = "DUPLICATE OR LOST EFFECT: " + strings.Join(bad, "; ")
		b.violations = append(b.violations, fmt.Sprintf("%s at %d clients: %s", name, c, strings.Join(bad, "; ")))
	}
	b.logf("  effects of %s at %d clients: +%d appointments, %d first executions, %d replays, %d in progress (409), %d unanswered, %d replays differing: %s",
		name, c, added, firsts, t.replays.Load(), t.conflicts.Load(), unknown, t.differ.Load(), verdict)
	if s := t.sample.Load(); s != nil {
		b.logf("  first unexpected answer: %s", *s)
	}
	return r, nil
}
