package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// The simulated model: it plays a call's script through the call's
// platform the way real models and platforms behave. The platform re-sends
// a request that failed, and now and then one that did not; the model
// calls a tool again with a new tool-call id, rewords its arguments (a
// local time or the same instant, ids in another case, members in another
// order, restated defaults), changes its mind, is interrupted and runs a
// tool again whose result it lost, calls tools in parallel, waits out a
// pending answer and checks the status; two callers want one slot at once;
// one caller calls on two platforms. Everything sent and heard is recorded
// in the call's history with the claims each answer makes.

// callPlay is what happened in one call.
type callPlay struct {
	mu     sync.Mutex
	events []*callEvent
	// customer is the caller's customer id as the model learned it.
	customer string
	intents  []*intentPlay
}

// intentPlay is what the model did for one intent.
type intentPlay struct {
	// tool and args are the tool call the intent is about (for the status
	// checks and the audit); appointment is the booking the model believes
	// the caller holds (a book intent's).
	tool        string
	args        ordered
	appointment string
	// skipped says why the intent was not played (an earlier step it
	// needs had no usable answer).
	skipped string
}

// callEvent is one request of a call and what came of it, or one step of
// the model.
type callEvent struct {
	At         time.Time
	Took       time.Duration
	Intent     int // the intent it served, -1 for the call's own steps
	Step       string
	Tool       string
	ToolCallID string
	Args       []byte
	Status     int
	Err        string
	Answer     *voiceAnswer
	Late       bool
	Lockout    bool
	Claims     []claim
	// False lists the claims the audit found not to hold.
	False []string
}

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

// callModel plays one call.
type callModel struct {
	r *callRunner
	c *callScript
	p *callPlay
}

// rngFor is the random source of one intent (or, for -1, of the call's own
// steps): each is seeded apart, so a call plays the same choices whatever
// its parallel steps interleave with.
func (m *callModel) rngFor(intent int) *rand.Rand {
	return rand.New(rand.NewPCG(m.r.seed^0x5eed, uint64(m.c.N)<<8|uint64(intent+1)))
}

// play plays the call to its end.
func (m *callModel) play(ctx context.Context) {
	c := m.c
	m.p = &callPlay{intents: make([]*intentPlay, len(c.Intents))}
	for i := range m.p.intents {
		m.p.intents[i] = &intentPlay{}
	}
	c.play = m.p
	rng := m.rngFor(-1)
	first := 0
	if c.Person.Seeded {
		// A returning caller: the model looks them up by the number they
		// call from.
		m.p.customer = m.findCustomer(ctx, rng)
		if m.p.customer == "" {
			m.skipFrom(0, "find_customer gave no customer")
			return
		}
	} else {
		// A new caller: the first intent makes their record.
		if m.create(ctx, c.Intents[0]); m.p.customer == "" {
			m.skipFrom(1, "create_customer gave no customer")
			return
		}
		first = 1
	}
	var group []*callIntent
	flush := func() {
		var wg sync.WaitGroup
		for _, in := range group {
			wg.Go(func() { m.intent(ctx, in) })
		}
		wg.Wait()
		group = nil
	}
	for _, in := range c.Intents[first:] {
		// Bookings go in turn (a move or a cancel needs the booking);
		// the rest, in a parallel call, at once.
		if c.Parallel && !in.needsBooking() && in.Kind != wantBook {
			group = append(group, in)
			continue
		}
		flush()
		m.intent(ctx, in)
	}
	flush()
}

func (m *callModel) skipFrom(i int, why string) {
	for ; i < len(m.p.intents); i++ {
		m.p.intents[i].skipped = why
	}
}

// intent plays one intent.
func (m *callModel) intent(ctx context.Context, in *callIntent) {
	rng := m.rngFor(in.N)
	ip := m.p.intents[in.N]
	sleep(ctx, m.r.turn/2+time.Duration(rng.Int64N(int64(m.r.turn)+1)))
	customer := m.p.customer
	switch in.Kind {
	case wantBook:
		m.book(ctx, in, rng)
	case wantMove, wantCancel:
		appt, why := "", ""
		if in.Of == nil {
			appt, why = m.listed(ctx, rng)
		} else if appt = m.p.intents[in.Of.N].appointment; appt == "" {
			why = skippedNoBooking // its booking intent is judged
		}
		if appt == "" {
			ip.skipped = why
			return
		}
		if in.Kind == wantCancel {
			m.ask(ctx, in, rng, "cancel_appointment", argSpec{{K: "appointment_id", V: appt}})
			return
		}
		m.ask(ctx, in, rng, "reschedule_appointment", argSpec{{K: "appointment_id", V: appt}, {K: "slot_id", V: in.Slot.ID}})
	case wantPay:
		m.ask(ctx, in, rng, "charge_payment", argSpec{{K: "payment_intent_id", V: in.PI.ID}, {K: "amount", V: in.PI.Amount, Def: true}})
	case wantLink:
		m.ask(ctx, in, rng, "send_payment_link", argSpec{{K: "payment_intent_id", V: in.PI.ID}})
	case wantMessage:
		spec := argSpec{
			{K: "customer_id", V: customer}, {K: "channel", V: "sms", Alt: "SMS"}, {K: "template", V: "generic"},
			{K: "variables", V: map[string]string{"body": "Your reference is " + in.Token}},
			{K: "subject_id", V: "", Def: true},
		}
		if in.Ref != "" {
			spec = append(spec, argField{K: "send_ref", V: in.Ref})
		} else {
			spec = append(spec, argField{K: "send_ref", V: "", Def: true})
		}
		m.ask(ctx, in, rng, "send_message", spec)
	case wantNote:
		spec := argSpec{{K: "customer_id", V: customer}, {K: "text", V: "Prefers mornings (" + in.Token + ")", Alt: "Prefers morning appointments (" + in.Token + ")"}}
		if in.Ref != "" {
			spec = append(spec, argField{K: "note_ref", V: in.Ref})
		}
		if a := m.ask(ctx, in, rng, "add_customer_note", spec); a != nil && a.Outcome == "confirmed" && in.Change {
			// The caller changes their mind: the whole note again, reworded.
			spec[1] = argField{K: "text", V: "Prefers afternoons now (" + in.Token + ")"}
			m.note(ctx, in, "the caller changes the note")
			m.ask(ctx, in, rng, "add_customer_note", spec)
		}
	case wantPoints:
		spec := argSpec{
			{K: "customer_id", V: customer}, {K: "delta", V: in.Delta},
			{K: "reason", V: "Visit reward " + in.Token, Alt: "Reward for today's visit " + in.Token},
			{K: "points_ref", V: "", Def: true},
		}
		m.ask(ctx, in, rng, "add_loyalty_points", spec)
	case wantCallback:
		spec := m.callbackSpec(customer, in, in.Window)
		if a := m.ask(ctx, in, rng, "request_callback", spec); a != nil && a.Outcome == "confirmed" && in.Change {
			m.note(ctx, in, "the caller changes the window")
			m.ask(ctx, in, rng, "request_callback", m.callbackSpec(customer, in, in.Window2))
		}
	}
}

func (m *callModel) callbackSpec(customer string, in *callIntent, w [2]time.Time) argSpec {
	return argSpec{
		{K: "customer_id", V: customer}, {K: "reason", V: "A question about the bill " + in.Token},
		{K: "window_start", V: w[0].Format("2006-01-02T15:04"), Alt: w[0].Format("2006-01-02T15:04:05")},
		{K: "window_end", V: w[1].Format("2006-01-02T15:04"), Alt: w[1].Format("2006-01-02 15:04")},
	}
}

// create makes a new caller's record (intent 0).
func (m *callModel) create(ctx context.Context, in *callIntent) {
	rng := m.rngFor(in.N)
	a := m.ask(ctx, in, rng, "create_customer", argSpec{{K: "name", V: m.c.Person.Name}, {K: "phone", V: m.c.Person.Phone}})
	if a != nil && a.Outcome == "confirmed" {
		m.p.customer = detailString(a, "id")
	}
}

// findCustomer looks a returning caller up by the number they call from.
func (m *callModel) findCustomer(ctx context.Context, rng *rand.Rand) string {
	for try := 0; try < 6 && ctx.Err() == nil; try++ {
		a := m.read(ctx, -1, rng, "find_customer", ordered{})
		if a != nil && a.Outcome == "confirmed" {
			var d struct {
				Customers []struct {
					CustomerID string `json:"customer_id"`
				} `json:"customers"`
			}
			if json.Unmarshal(a.Details, &d) == nil && len(d.Customers) == 1 {
				return d.Customers[0].CustomerID
			}
			return ""
		}
		m.backoff(ctx, rng, try)
	}
	return ""
}

// listed reads the caller's appointments and returns the booking made
// before the call, or why it cannot.
func (m *callModel) listed(ctx context.Context, rng *rand.Rand) (id, why string) {
	b := m.c.Booking
	if b == nil {
		return "", skippedNoBooking
	}
	for try := 0; try < 6 && ctx.Err() == nil; try++ {
		a := m.read(ctx, -1, rng, "list_appointments", ordered{{"customer_id", m.p.customer}})
		if a != nil && a.Outcome == "confirmed" {
			if bytes.Contains(a.Details, []byte(b.ID)) {
				return b.ID, ""
			}
			return "", "list_appointments did not list the booking " + b.ID
		}
		m.backoff(ctx, rng, try)
	}
	return "", "list_appointments gave no answer"
}

// book plays a booking: the slot (or the service at a time) the caller
// chose, another when it is taken, and, when the caller changes their
// mind, the new time the way models ask for it: book_appointment again,
// then, if that is refused, reschedule_appointment.
func (m *callModel) book(ctx context.Context, in *callIntent, rng *rand.Rand) {
	ip := m.p.intents[in.N]
	if m.c.pair != nil && in.Contended {
		m.c.pair.meet(ctx, 5*time.Second)
	}
	spec := m.bookSpec(in, in.Slot, rng)
	a := m.ask(ctx, in, rng, "book_appointment", spec)
	if a != nil && a.Outcome == "rejected" && in.Alternative != nil && !notBusiness[a.Reason] {
		m.note(ctx, in, "the caller takes another time")
		a = m.ask(ctx, in, rng, "book_appointment", m.bookSpec(in, in.Alternative, rng))
	}
	if a == nil || a.Outcome != "confirmed" {
		return
	}
	ip.appointment = bookedID(a)
	if in.ChangeTo == nil || ip.appointment == "" {
		return
	}
	m.note(ctx, in, "the caller changes their mind to "+in.ChangeTo.ID)
	again := m.ask(ctx, in, rng, "book_appointment", argSpec{{K: "customer_id", V: m.p.customer}, {K: "slot_id", V: in.ChangeTo.ID}})
	switch {
	case again != nil && again.Outcome == "confirmed":
		ip.appointment = bookedID(again)
	case again != nil && again.Outcome == "rejected":
		if moved := m.ask(ctx, in, rng, "reschedule_appointment", argSpec{
			{K: "appointment_id", V: ip.appointment}, {K: "slot_id", V: in.ChangeTo.ID},
		}); moved == nil || moved.Outcome != "confirmed" {
			return
		}
	}
}

// bookSpec is the booking of slot, or of the service at the time of the
// intent (as an instant or as the location's wall-clock time: either
// spelling first, the other when the model rewords).
func (m *callModel) bookSpec(in *callIntent, slot *callSlot, rng *rand.Rand) argSpec {
	if in.At == nil || slot != in.Slot {
		return argSpec{{K: "customer_id", V: m.p.customer}, {K: "slot_id", V: slot.ID}, {K: "service", V: "", Def: true}}
	}
	instant := in.At.Start.UTC().Format(time.RFC3339)
	local := in.At.Start.In(m.c.Tenant.loc).Format("2006-01-02T15:04")
	if rng.IntN(2) == 0 {
		instant, local = local, instant
	}
	return argSpec{{K: "customer_id", V: m.p.customer}, {K: "service_id", V: m.c.Tenant.Service}, {K: "starts_at", V: instant, Alt: local}}
}

// ask makes the tool call of an intent as a model does, until it has an
// answer to act on (nil when none came): the platform delivers it (and may
// deliver it twice), the model may be interrupted and ask again, call the
// tool again after an answer, and follows a pending answer with status
// checks.
func (m *callModel) ask(ctx context.Context, in *callIntent, rng *rand.Rand, tool string, spec argSpec) *voiceAnswer {
	ip := m.p.intents[in.N]
	args := spec.spell(rng, false)
	if m.c.MadeUp != "" && !readOnlyTool(tool) {
		// The model invents an action_id instead of leaving it out.
		args = append(args, kv{"action_id", m.c.MadeUp})
	}
	m.p.mu.Lock()
	ip.tool, ip.args = tool, args
	m.p.mu.Unlock()
	var a *voiceAnswer
	for try := 0; try < 6 && ctx.Err() == nil; try++ {
		step := "ask"
		if try > 0 {
			step = "ask again"
		}
		a = m.once(ctx, in.N, rng, step, tool, args)
		switch {
		case a == nil || (a.Outcome == "pending" && a.ActionID == ""):
			// No answer, or only that an earlier attempt is under way: the
			// same call again (reworded now and then) after a pause.
			m.backoff(ctx, rng, try)
			if rng.IntN(4) == 0 {
				args = m.reword(spec, rng, args)
			}
			continue
		case a.Outcome == "pending":
			return m.follow(ctx, in, rng, tool, args, a)
		case a.Outcome == "rejected" && a.Reason == "invalid_arguments" && args.get("action_id") != nil && detailString(a, "field") == "action_id":
			// The invented action_id was refused: the say asks for the
			// call without it.
			args = slicesDeleteFunc(args, func(e kv) bool { return e.K == "action_id" })
			m.p.mu.Lock()
			ip.args = args
			m.p.mu.Unlock()
			continue
		case a.Outcome == "rejected" && a.Reason == "conflicting_request":
			// What stands is not known yet: the say asks to follow it.
			if id := pendingExisting(a); id != "" {
				return m.follow(ctx, in, rng, tool, args, &voiceAnswer{Outcome: "pending", ActionID: id})
			}
		}
		// Now and then the model calls the tool again, with a new
		// tool-call id and perhaps other words, and acts on the latest
		// answer; more often after a refusal ("let me try that again").
		odds := 8
		if a.Outcome == "rejected" && !notBusiness[a.Reason] {
			odds = 3
		}
		if rng.IntN(odds) == 0 {
			sleep(ctx, m.r.turn)
			next := m.once(ctx, in.N, rng, "re-invoke", tool, m.reword(spec, rng, args))
			if next != nil && next.Outcome != "pending" {
				a = next
			}
		}
		return a
	}
	return a
}

// reword spells the arguments again: reworded half of the time, with the
// same made-up action_id if the model used one.
func (m *callModel) reword(spec argSpec, rng *rand.Rand, was ordered) ordered {
	args := spec.spell(rng, rng.IntN(2) == 0)
	if id := was.get("action_id"); id != nil {
		args = append(args, kv{"action_id", id})
	}
	return args
}

// follow follows a pending answer: the model waits past the platform's
// budget and checks the action's status, now and then calling the tool
// again with the action_id, until the outcome is known or it gives up.
func (m *callModel) follow(ctx context.Context, in *callIntent, rng *rand.Rand, tool string, args ordered, a *voiceAnswer) *voiceAnswer {
	id := a.ActionID
	end := time.Now().Add(m.r.statusFor)
	for time.Now().Before(end) && ctx.Err() == nil {
		if a.Reason == "needs_operator" {
			return a // final for this call
		}
		sleep(ctx, m.r.statusEvery/2+time.Duration(rng.Int64N(int64(m.r.statusEvery)+1)))
		var next *voiceAnswer
		if rng.IntN(5) == 0 {
			withID := append(slicesDeleteFunc(args, func(e kv) bool { return e.K == "action_id" }), kv{"action_id", id})
			next = m.once(ctx, in.N, rng, "again with action_id", tool, withID)
		} else {
			next = m.status(ctx, in.N, rng, id, false)
		}
		if next == nil {
			continue
		}
		a = next
		if a.Outcome != "pending" {
			return a
		}
	}
	return a
}

// status asks check_action_status about id.
func (m *callModel) status(ctx context.Context, intent int, rng *rand.Rand, id string, late bool) *voiceAnswer {
	step := "status"
	if late {
		step = "status after the run"
	}
	return m.once(ctx, intent, rng, step, "check_action_status", ordered{{"action_id", id}})
}

// read makes a read-only tool call (nothing to follow).
func (m *callModel) read(ctx context.Context, intent int, rng *rand.Rand, tool string, args ordered) *voiceAnswer {
	return m.once(ctx, intent, rng, "read", tool, args)
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
	var twins sync.WaitGroup
	again := func(i int, delay time.Duration, what string) {
		trng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		twins.Go(func() {
			if sleep(ctx, delay) {
				m.deliverWithRetries(ctx, intent, trng, fmt.Sprintf("%s (%s, %d)", step, what, i+1), calls, d.clone(), 0, pin)
			}
		})
	}
	for i := range extra {
		again(i, time.Duration(rng.IntN(200))*time.Millisecond, "delivered again")
	}
	answered := make(chan struct{})
	if m.c.Impatient && !readOnlyTool(tool) {
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
				again(i, 0, "sent again while the answer is slow")
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

// record adds e to the history with the claims its answer makes.
func (m *callModel) record(e *callEvent) {
	if e.Answer != nil {
		e.Claims = m.claims(e)
	}
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	m.p.events = append(m.p.events, e)
}

// note records a step of the model.
func (m *callModel) note(_ context.Context, in *callIntent, what string) {
	m.record(&callEvent{At: time.Now(), Intent: in.N, Step: what})
}

// backoff waits before trying again: from 200ms, doubling, at most 3s.
func (m *callModel) backoff(ctx context.Context, rng *rand.Rand, try int) {
	d := 200 * time.Millisecond << min(try, 4)
	sleep(ctx, min(d/2+time.Duration(rng.Int64N(int64(d))), 3*time.Second))
}

// lateCheck asks, once the run has settled, for the outcome of every
// intent whose last answer was pending, as a model checks back.
func (m *callModel) lateCheck(ctx context.Context) {
	for _, in := range m.c.Intents {
		last := m.p.last(in.N)
		if last == nil || last.Outcome != "pending" || last.ActionID == "" {
			continue
		}
		rng := m.rngFor(in.N + 1000)
		for try := 0; try < 8 && ctx.Err() == nil; try++ {
			if a := m.status(ctx, in.N, rng, last.ActionID, true); a != nil {
				break
			}
			m.backoff(ctx, rng, try)
		}
	}
}

// last is the last answer heard for an intent (status checks included).
func (p *callPlay) last(intent int) *voiceAnswer {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.events) - 1; i >= 0; i-- {
		if e := p.events[i]; e.Intent == intent && e.Answer != nil {
			return e.Answer
		}
	}
	return nil
}

// meet waits until both calls of a pair arrived, at most d.
func (r *rendezvous) meet(ctx context.Context, d time.Duration) {
	r.arrived <- struct{}{}
	end := time.Now().Add(d)
	for len(r.arrived) < 2 && time.Now().Before(end) && ctx.Err() == nil {
		sleep(ctx, 5*time.Millisecond)
	}
}

// argField is one argument of a tool call, with another spelling of the
// same value (Alt) a rewording may use, or marked as a restated default
// (sent only when rewording).
type argField struct {
	K   string
	V   any
	Alt any
	Def bool
}

type argSpec []argField

// spell writes the arguments in a random order; reworded, it uses other
// spellings, upper-case ids and restated defaults now and then.
func (s argSpec) spell(rng *rand.Rand, reword bool) ordered {
	var o ordered
	upper := reword && rng.IntN(3) == 0
	for _, f := range s {
		if f.Def && (!reword || rng.IntN(2) == 0) {
			continue
		}
		v := f.V
		if reword && f.Alt != nil && rng.IntN(10) < 7 {
			v = f.Alt
		}
		if str, ok := v.(string); ok && upper && len(str) == 36 {
			if _, err := uuid.Parse(str); err == nil {
				v = strings.ToUpper(str)
			}
		}
		o = append(o, kv{f.K, v})
	}
	rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
	return o
}

func readOnlyTool(tool string) bool {
	switch tool {
	case "check_action_status", "find_customer", "get_customer", "list_appointments", "find_available_slots",
		"list_payment_intents", "list_services", "list_practitioners":
		return true
	}
	return false
}

func platformIndex(p string) int {
	for i, q := range callPlatforms {
		if q == p {
			return i
		}
	}
	return 0
}

// details reads an answer's details: those of the action as it was, when
// the answer says it has changed since.
func details(a *voiceAnswer) map[string]json.RawMessage {
	var d map[string]json.RawMessage
	if json.Unmarshal(a.Details, &d) != nil {
		return nil
	}
	if inner, ok := d["as_of_the_action"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(inner, &m) == nil {
			return m
		}
	}
	return d
}

func detailString(a *voiceAnswer, key string) string {
	return rawString(details(a)[key])
}

func rawString(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) != nil {
		return ""
	}
	return s
}

// pendingExisting is the action a conflicting_request answer says stands
// and is not settled yet, or "".
func pendingExisting(a *voiceAnswer) string {
	var d struct {
		ExistingActionID string `json:"existing_action_id"`
		Existing         struct {
			Outcome string `json:"outcome"`
		} `json:"existing"`
	}
	if json.Unmarshal(a.Details, &d) != nil || d.Existing.Outcome != "pending" {
		return ""
	}
	return d.ExistingActionID
}

// bookedID is the appointment a booking's answer names.
func bookedID(a *voiceAnswer) string { return detailString(a, "id") }
