package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
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
		if in.Restate || rng.IntN(odds) == 0 {
			sleep(ctx, m.r.turn)
			again := m.reword(spec, rng, args)
			if in.Restate {
				again = m.restate(spec, rng, args)
			}
			next := m.once(ctx, in.N, rng, "re-invoke", tool, again)
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

// restate spells the arguments in other words: every value that has
// another spelling in it.
func (m *callModel) restate(spec argSpec, rng *rand.Rand, was ordered) ordered {
	alt := make(argSpec, len(spec))
	for i, f := range spec {
		if f.Alt != nil {
			f.V = f.Alt
		}
		alt[i] = f
	}
	args := alt.spell(rng, false)
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
// intent the model was still waiting on, as a model checks back.
func (m *callModel) lateCheck(ctx context.Context) {
	for _, in := range m.c.Intents {
		id := m.p.waitingOn(in.N)
		if id == "" {
			continue
		}
		rng := m.rngFor(in.N + 1000)
		for try := 0; try < 8 && ctx.Err() == nil; try++ {
			if a := m.status(ctx, in.N, rng, id, true); a != nil {
				break
			}
			m.backoff(ctx, rng, try)
		}
	}
}

// waitingOn is the action an intent's model was last told to wait for (a
// pending answer, or a conflicting_request naming one still pending), when
// no answer that settles the intent came after it; else "".
func (p *callPlay) waitingOn(intent int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.events) - 1; i >= 0; i-- {
		e := p.events[i]
		if e.Intent != intent || e.Answer == nil {
			continue
		}
		for _, cl := range e.Claims {
			if cl.What != claimNotYet {
				return "" // settled: it claims the effect, or that it was not done
			}
		}
		switch {
		case e.Answer.Outcome == "pending" && e.Answer.ActionID != "":
			return e.Answer.ActionID
		case pendingExisting(e.Answer) != "":
			return pendingExisting(e.Answer)
		}
	}
	return ""
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
