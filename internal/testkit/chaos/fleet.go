package chaos

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds of logical action, named by what the caller wants done once.
const (
	kindBook   = "book"   // book_appointment / POST /v1/appointments on a slot of its own
	kindCharge = "charge" // charge_payment / POST /v1/payments on a fresh payment intent
	kindSend   = "send"   // send_message / POST /v1/messages with a send_ref of its own
	kindPoints = "points" // add_loyalty_points / POST /v1/customers/{id}/points for a customer of its own
)

// How a caller talks to oncecall.
const (
	styleDasha = "dasha" // tool webhooks: the same body on every retry, check_action_status for pending
	styleREST  = "rest"  // the same Idempotency-Key on every retry, GET /v1/actions/{id} for pending
)

// Bounds of one caller's patience.
const (
	attemptTimeout = 3 * time.Second  // one HTTP request
	actionBudget   = 30 * time.Second // one logical action, retries and polls included
	maxAttempts    = 60               // write attempts per logical action
	maxPolls       = 80               // status checks per logical action
	pollEvery      = 300 * time.Millisecond
)

// answer is one thing a caller was told about its logical action.
type answer struct {
	Outcome  string // confirmed, rejected or pending
	ActionID string
	Reason   string
	// Late answers come from the status check after the run settled.
	Late bool
}

// logical is one logical action: what one caller wants done once, and
// everything it was told about it. Only its own client goroutine writes it
// while the fleet runs.
type logical struct {
	N        int64
	Kind     string
	Style    string
	Identity string // slot id, payment intent id, send_ref or customer id
	Notify   bool   // a booking that also sends a confirmation message
	Delta    int64  // the points a points change adds
	Answers  []answer
	Attempts int
	Polls    int
	// Unknown counts the answers that said the outcome is unknown (a
	// commit whose answer was lost, or not known to be replicated).
	Unknown int
	// Failure is an answer the fleet did not expect (a protocol error);
	// the audit reports it.
	Failure string
	// Acct is the tenant it is asked as: nil for the run's main tenant, a
	// calendar tenant's for a booking in its own calendar.
	Acct *account
}

// account is a tenant the fleet asks as: its API key, Dasha org and
// customers.
type account struct {
	key, org  string
	customers []string
}

// key names the logical action the way the ledger and the actions table
// can be matched to it.
func (l *logical) key() string { return l.Kind + ":" + l.Identity }

// tell records an answer, skipping a pending answer that repeats the last one.
func (l *logical) tell(a answer) {
	if n := len(l.Answers); n > 0 && a.Outcome == "pending" && l.Answers[n-1] == a {
		return
	}
	l.Answers = append(l.Answers, a)
}

// last is the latest answer, or the zero answer.
func (l *logical) last() answer {
	if len(l.Answers) == 0 {
		return answer{}
	}
	return l.Answers[len(l.Answers)-1]
}

// actionID is the latest action id the caller was given.
func (l *logical) actionID() string {
	for i := len(l.Answers) - 1; i >= 0; i-- {
		if l.Answers[i].ActionID != "" {
			return l.Answers[i].ActionID
		}
	}
	return ""
}

// fleet is the population of callers.
type fleet struct {
	replicas   *replicas
	hc         *http.Client
	apiKey     string
	org        string
	run        string // distinguishes this run's keys and references
	customers  []string
	slots      []string
	nextSlot   atomic.Int64
	members    []string // customers made for points changes, one per change
	nextMember atomic.Int64
	// calSlots are the slots of the tenants whose appointments live in
	// their own calendars (Config.Calendars), each booked once.
	calSlots []calSlot
	nextCal  atomic.Int64
	seq      atomic.Int64

	attempts atomic.Int64 // write requests of logical actions
	polls    atomic.Int64 // status checks
	setup    atomic.Int64 // payment intents created for charges

	// budget, maxAttempts and maxPolls bound one logical action; zero
	// means actionBudget, maxAttempts and maxPolls. A failover run raises
	// them: a caller retries through every write gap until it is answered.
	budget                time.Duration
	attemptsCap, pollsCap int
	gaps                  writeGaps

	mu      sync.Mutex
	actions []*logical
}

func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}

// client runs logical actions one after the other until stop closes; the
// action under way when it closes is finished within its own bounds.
func (f *fleet) client(ctx context.Context, stop <-chan struct{}, rng *rand.Rand) {
	c := &caller{f: f, rng: rng}
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		l := c.plan(ctx)
		if l == nil {
			continue
		}
		f.mu.Lock()
		f.actions = append(f.actions, l)
		f.mu.Unlock()
		c.perform(ctx, l)
	}
}

// all returns the logical actions; call it once the clients are done.
func (f *fleet) all() []*logical {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.actions
}

// caller is one client goroutine.
type caller struct {
	f   *fleet
	rng *rand.Rand
	// unknown: the last call was answered "outcome unknown".
	unknown bool
	// acct is the tenant the current logical action is asked as (nil: the
	// main one).
	acct *account
}

// calSlot is a slot of a calendar tenant.
type calSlot struct {
	id   string
	acct *account
}

func (c *caller) apiKey() string {
	if c.acct != nil {
		return c.acct.key
	}
	return c.f.apiKey
}

func (c *caller) org() string {
	if c.acct != nil {
		return c.acct.org
	}
	return c.f.org
}

// plan picks the next logical action: its kind, its style and its own slot,
// payment intent, send_ref or customer. nil when it could not be prepared.
func (c *caller) plan(ctx context.Context) *logical {
	n := c.f.seq.Add(1)
	l := &logical{N: n, Style: styleREST}
	if c.rng.IntN(2) == 0 {
		l.Style = styleDasha
	}
	switch r := c.rng.IntN(20); {
	case r < 6:
		if len(c.f.calSlots) > 0 && c.rng.IntN(2) == 0 {
			if i := c.f.nextCal.Add(1) - 1; i < int64(len(c.f.calSlots)) {
				s := c.f.calSlots[i]
				l.Kind, l.Identity, l.Notify, l.Acct = kindBook, s.id, c.rng.IntN(4) == 0, s.acct
				return l
			}
		}
		if id, ok := take(&c.f.nextSlot, c.f.slots); ok {
			l.Kind, l.Identity, l.Notify = kindBook, id, c.rng.IntN(4) == 0
			return l
		}
	case r < 11:
		if id, ok := take(&c.f.nextMember, c.f.members); ok {
			l.Kind, l.Identity, l.Delta = kindPoints, id, 1+c.rng.Int64N(500)
			return l
		}
	case r >= 15:
		id, ok := c.createIntent(ctx, n)
		if !ok {
			return nil
		}
		l.Kind, l.Identity = kindCharge, id
		return l
	}
	// A message; also instead of a booking or a points change once the
	// slots or customers made for them ran out.
	l.Kind = kindSend
	l.Identity = fmt.Sprintf("chaos-%s-%d", c.f.run, n)
	return l
}

// take hands out the next of ids, each once.
func take(next *atomic.Int64, ids []string) (string, bool) {
	if i := next.Add(1) - 1; i < int64(len(ids)) {
		return ids[i], true
	}
	return "", false
}

func (c *caller) customer() string {
	if c.acct != nil {
		return c.acct.customers[c.rng.IntN(len(c.acct.customers))]
	}
	return c.f.customers[c.rng.IntN(len(c.f.customers))]
}

// arguments is the operation's input: the tool arguments, and the REST path
// and body (the arguments less those the path carries).
func (c *caller) arguments(l *logical) (tool, path string, args, body map[string]any) {
	switch l.Kind {
	case kindBook:
		args = map[string]any{"customer_id": c.customer(), "slot_id": l.Identity}
		if l.Notify {
			args["notify"] = "sms"
		}
		return "book_appointment", "/v1/appointments", args, args
	case kindCharge:
		args = map[string]any{"payment_intent_id": l.Identity}
		return "charge_payment", "/v1/payments", args, args
	case kindPoints:
		body = map[string]any{"delta": l.Delta, "reason": "Chaos visit " + strconv.FormatInt(l.N, 10)}
		args = map[string]any{"customer_id": l.Identity, "delta": body["delta"], "reason": body["reason"]}
		return "add_loyalty_points", "/v1/customers/" + l.Identity + "/points", args, body
	default:
		args = map[string]any{
			"customer_id": c.customer(), "channel": "sms", "template": "generic",
			"variables": map[string]string{"body": "Your reference is " + strconv.FormatInt(l.N, 10)},
			"send_ref":  l.Identity,
		}
		return "send_message", "/v1/messages", args, args
	}
}

func (c *caller) perform(ctx context.Context, l *logical) {
	c.acct = l.Acct
	defer func() { c.acct = nil }()
	tool, path, args, restArgs := c.arguments(l)
	deadline := time.Now().Add(c.f.actionBudget())
	if l.Style == styleREST {
		body, _ := json.Marshal(restArgs) // maps of strings and numbers: cannot fail
		key := fmt.Sprintf("chaos-%s-%d", c.f.run, l.N)
		send := func(ctx context.Context, c *caller) reply { return c.restOnce(ctx, path, body, key) }
		if id := c.write(ctx, l, send, deadline); id != "" {
			c.restPoll(ctx, l, id, deadline)
		}
		return
	}
	callID := fmt.Sprintf("chaos-%s-call-%d", c.f.run, l.N)
	body := toolPayload(c.org(), callID, tool, args)
	send := func(ctx context.Context, c *caller) reply { return c.dashaOnce(ctx, tool, body) }
	if id := c.write(ctx, l, send, deadline); id != "" {
		c.dashaFollow(ctx, l, tool, callID, args, id, deadline)
	}
}

// reply is what one write attempt brought.
type reply struct {
	ans answer
	// again: no usable answer (none at all, 5xx, 409, or an earlier
	// attempt still holds the claim): send the same request again.
	again bool
	wait  time.Duration // Retry-After
	// failure: an answer the fleet did not expect.
	failure string
}

// write sends the same request until it is answered, and returns the action
// id to follow when the answer is pending. Now and then the first attempt is
// doubled: the same request at once to another replica, as a caller that
// double-submits or retries while the first attempt still runs.
func (c *caller) write(ctx context.Context, l *logical, send func(context.Context, *caller) reply, deadline time.Time) (pending string) {
	var racer chan reply
	if c.rng.IntN(8) == 0 {
		twin := &caller{f: c.f, rng: rand.New(rand.NewPCG(c.rng.Uint64(), c.rng.Uint64())), acct: c.acct}
		racer = make(chan reply, 1)
		l.Attempts++
		c.f.attempts.Add(1)
		go func() { racer <- send(ctx, twin) }()
	}
	defer func() {
		if racer == nil {
			return
		}
		r := <-racer
		switch {
		case r.failure != "":
			l.Failure = r.failure
		case !r.again:
			l.tell(r.ans)
		}
	}()
	for try := 0; try < c.f.maxAttempts() && time.Now().Before(deadline) && ctx.Err() == nil; try++ {
		l.Attempts++
		c.f.attempts.Add(1)
		r := send(ctx, c)
		if c.unknown {
			l.Unknown++
		}
		switch {
		case r.failure != "":
			l.Failure = r.failure
			return ""
		case r.again:
			c.pause(ctx, try, r.wait)
			continue
		}
		l.tell(r.ans)
		if r.ans.Outcome == "pending" {
			return r.ans.ActionID
		}
		return ""
	}
	return ""
}

// restOnce posts a REST write with its Idempotency-Key.
func (c *caller) restOnce(ctx context.Context, path string, body []byte, key string) reply {
	status, b, retry, err := c.call(ctx, http.MethodPost, path, body, key)
	switch {
	case err != nil || status >= 500 || status == http.StatusTooManyRequests || status == http.StatusConflict:
		return reply{again: true, wait: retry}
	case status == http.StatusOK || status == http.StatusCreated || status == http.StatusAccepted:
		var e struct {
			ActionID string `json:"action_id"`
			Outcome  string `json:"outcome"`
		}
		if json.Unmarshal(b, &e) != nil || e.ActionID == "" || (e.Outcome != "confirmed" && e.Outcome != "pending") {
			return reply{failure: fmt.Sprintf("POST %s answered %d with %s", path, status, snippet(b))}
		}
		return reply{ans: answer{Outcome: e.Outcome, ActionID: e.ActionID}}
	case status == http.StatusUnprocessableEntity:
		var p struct {
			Code     string `json:"code"`
			Outcome  string `json:"outcome"`
			ActionID string `json:"action_id"`
		}
		if json.Unmarshal(b, &p) != nil || p.Outcome != "rejected" || p.ActionID == "" {
			return reply{failure: fmt.Sprintf("POST %s answered 422 with %s", path, snippet(b))}
		}
		return reply{ans: answer{Outcome: "rejected", ActionID: p.ActionID, Reason: p.Code}}
	}
	return reply{failure: fmt.Sprintf("POST %s answered %d with %s", path, status, snippet(b))}
}

// dashaOnce posts a tool call; the same body every time.
func (c *caller) dashaOnce(ctx context.Context, tool string, body []byte) reply {
	ans, ok, failure := c.dashaCall(ctx, tool, body)
	switch {
	case failure != "":
		return reply{failure: failure}
	case !ok || (ans.Outcome == "pending" && ans.ActionID == ""):
		return reply{again: true}
	}
	return reply{ans: answer{Outcome: ans.Outcome, ActionID: ans.ActionID, Reason: ans.Reason}}
}

// restPoll asks GET /v1/actions/{id} until the outcome is known.
func (c *caller) restPoll(ctx context.Context, l *logical, id string, deadline time.Time) {
	for try := 0; l.Polls < c.f.maxPolls() && time.Now().Before(deadline) && ctx.Err() == nil; {
		if !sleep(ctx, pollEvery) {
			return
		}
		a, ok, failure := c.restStatus(ctx, l, id)
		switch {
		case failure != "":
			l.Failure = failure
			return
		case !ok:
			try++
			c.pause(ctx, try, 0)
		default:
			l.tell(a)
			if a.Outcome != "pending" {
				return
			}
		}
	}
}

// restStatus makes one GET /v1/actions/{id}; ok is false when it should be
// asked again (the replica or the database was away).
func (c *caller) restStatus(ctx context.Context, l *logical, id string) (a answer, ok bool, failure string) {
	l.Polls++
	c.f.polls.Add(1)
	status, b, _, err := c.call(ctx, http.MethodGet, "/v1/actions/"+id, nil, "")
	switch {
	case err != nil || status >= 500 || status == http.StatusTooManyRequests:
		return a, false, ""
	case status != http.StatusOK:
		return a, false, fmt.Sprintf("GET /v1/actions/%s answered %d with %s", id, status, snippet(b))
	}
	var e struct {
		ActionID string  `json:"action_id"`
		Outcome  string  `json:"outcome"`
		Reason   *string `json:"reason"`
	}
	if json.Unmarshal(b, &e) != nil || e.ActionID != id {
		return a, false, fmt.Sprintf("GET /v1/actions/%s answered %s", id, snippet(b))
	}
	a = answer{Outcome: e.Outcome, ActionID: e.ActionID}
	if e.Reason != nil {
		a.Reason = *e.Reason
	}
	return a, true, ""
}

// toolAnswer is the body of a Dasha tool answer.
type toolAnswer struct {
	Outcome  string `json:"outcome"`
	ActionID string `json:"action_id"`
	Reason   string `json:"reason"`
}

// notBusiness are rejections of the tool call itself, not of the action.
var notBusiness = map[string]bool{"invalid_arguments": true, "conflicting_request": true, "unknown_action": true}

// dashaFollow follows a pending tool answer like a voice agent: it checks
// the action's status and now and then calls the tool again with the
// action_id, as the tool's description tells the model to.
func (c *caller) dashaFollow(ctx context.Context, l *logical, tool, callID string, args map[string]any, id string, deadline time.Time) {
	status := toolPayload(c.org(), callID, "check_action_status", map[string]any{"action_id": id})
	again := make(map[string]any, len(args)+1)
	for k, v := range args {
		again[k] = v
	}
	again["action_id"] = id
	retry := toolPayload(c.org(), callID, tool, again)
	for try := 0; l.Polls < c.f.maxPolls() && time.Now().Before(deadline) && ctx.Err() == nil; {
		if !sleep(ctx, pollEvery) {
			return
		}
		var ans toolAnswer
		var ok bool
		var failure string
		if c.rng.IntN(5) == 0 {
			l.Attempts++
			c.f.attempts.Add(1)
			ans, ok, failure = c.dashaCall(ctx, tool, retry)
		} else {
			l.Polls++
			c.f.polls.Add(1)
			ans, ok, failure = c.dashaCall(ctx, "check_action_status", status)
		}
		switch {
		case failure != "":
			l.Failure = failure
			return
		case !ok || ans.ActionID == "":
			try++
			c.pause(ctx, try, 0)
			continue
		}
		if ans.ActionID != id {
			l.Failure = fmt.Sprintf("%s for action %s answered about action %s", tool, id, ans.ActionID)
			return
		}
		l.tell(answer{Outcome: ans.Outcome, ActionID: ans.ActionID, Reason: ans.Reason})
		if ans.Outcome != "pending" {
			return
		}
	}
}

// dashaCall posts one tool call. ok is false when Dasha would retry it (no
// answer, 5xx).
func (c *caller) dashaCall(ctx context.Context, tool string, body []byte) (ans toolAnswer, ok bool, failure string) {
	status, b, _, err := c.call(ctx, http.MethodPost, "/v1/dasha/tools/"+tool, body, "")
	switch {
	case err != nil || status >= 500 || status == http.StatusTooManyRequests:
		return ans, false, ""
	case status != http.StatusOK:
		return ans, false, fmt.Sprintf("%s answered %d with %s", tool, status, snippet(b))
	}
	if json.Unmarshal(b, &ans) != nil {
		return ans, false, fmt.Sprintf("%s answered %s", tool, snippet(b))
	}
	switch ans.Outcome {
	case "confirmed", "pending":
	case "rejected":
		if notBusiness[ans.Reason] {
			return ans, false, fmt.Sprintf("%s answered rejected %s", tool, ans.Reason)
		}
	default:
		return ans, false, fmt.Sprintf("%s answered outcome %q", tool, ans.Outcome)
	}
	return ans, true, ""
}

// toolPayload is a Dasha ToolWebHookPayload.
func toolPayload(org, callID, tool string, args map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{ // maps of strings: cannot fail
		"type": "ToolWebHookPayload", "status": "Running", "callId": callID, "agentId": "chaos-agent",
		"orgId": org, "toolName": tool, "arguments": args,
		"callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{},
	})
	return b
}

// createIntent approves a payment for a charge to take, over REST with its
// own key (a local operation, retried like any write).
func (c *caller) createIntent(ctx context.Context, n int64) (string, bool) {
	body, _ := json.Marshal(map[string]any{"customer_id": c.customer(), "amount": 1000 + n%500, "currency": "EUR"})
	key := fmt.Sprintf("chaos-%s-intent-%d", c.f.run, n)
	deadline := time.Now().Add(c.f.actionBudget())
	for try := 0; try < c.f.maxAttempts() && time.Now().Before(deadline) && ctx.Err() == nil; try++ {
		c.f.setup.Add(1)
		status, b, retry, err := c.call(ctx, http.MethodPost, "/v1/payment-intents", body, key)
		switch {
		case err != nil || status >= 500 || status == http.StatusTooManyRequests || status == http.StatusConflict:
			c.pause(ctx, try, retry)
		case status == http.StatusCreated:
			var e struct {
				Result struct{ ID string } `json:"result"`
			}
			if json.Unmarshal(b, &e) != nil || e.Result.ID == "" {
				return "", false
			}
			return e.Result.ID, true
		default:
			return "", false
		}
	}
	return "", false
}

// call sends one request to a random live replica.
func (c *caller) call(ctx context.Context, method, path string, body []byte, key string) (status int, b []byte, retry time.Duration, err error) {
	c.unknown = false
	base := c.f.replicas.pick(c.rng)
	if base == "" {
		return 0, nil, 0, errNoReplica
	}
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.f.hc.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	b, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, 0, err // cut off mid-answer: as good as no answer
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		retry = time.Duration(s) * time.Second
	}
	c.unknown = resp.StatusCode == http.StatusServiceUnavailable && bytes.Contains(b, []byte("outcome is unknown"))
	if method == http.MethodPost && wrote(resp.StatusCode, b) {
		c.f.gaps.answered(time.Now())
	}
	return resp.StatusCode, b, retry, nil
}

// pause waits before the next attempt: exponential with jitter from 50ms,
// at most 1s, at least what Retry-After asked for up to that cap.
func (c *caller) pause(ctx context.Context, try int, retryAfter time.Duration) {
	d := 50 * time.Millisecond << min(try, 5)
	d = d/2 + time.Duration(c.rng.Int64N(int64(d)))
	d = min(max(d, retryAfter), time.Second)
	sleep(ctx, d)
}

// sleep waits d unless ctx ends first; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func snippet(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strconv.Quote(string(b))
}

// lateCheck asks, once the run has settled, for the outcome of every
// logical action whose caller last heard pending: what a caller learns
// when it checks back later is an answer like any other.
func (f *fleet) lateCheck(ctx context.Context, rng *rand.Rand) {
	c := &caller{f: f, rng: rng}
	for _, l := range f.all() {
		last := l.last()
		id := l.actionID()
		if id == "" || last.Outcome == "confirmed" || last.Outcome == "rejected" {
			continue
		}
		c.acct = l.Acct
		for try := 0; try < 10 && ctx.Err() == nil; try++ {
			var a answer
			var ok bool
			var failure string
			if l.Style == styleREST {
				a, ok, failure = c.restStatus(ctx, l, id)
			} else {
				var ans toolAnswer
				body := toolPayload(c.org(), fmt.Sprintf("chaos-%s-call-%d", f.run, l.N), "check_action_status", map[string]any{"action_id": id})
				l.Polls++
				f.polls.Add(1)
				ans, ok, failure = c.dashaCall(ctx, "check_action_status", body)
				a = answer{Outcome: ans.Outcome, ActionID: ans.ActionID, Reason: ans.Reason}
			}
			if failure != "" {
				l.Failure = failure
				break
			}
			if ok {
				a.Late = true
				l.tell(a)
				break
			}
			c.pause(ctx, try, 0)
		}
	}
}

func (f *fleet) actionBudget() time.Duration { return cmp.Or(f.budget, actionBudget) }
func (f *fleet) maxAttempts() int            { return cmp.Or(f.attemptsCap, maxAttempts) }
func (f *fleet) maxPolls() int               { return cmp.Or(f.pollsCap, maxPolls) }

// wrote reports whether a write's answer shows the database took writes:
// a REST write answered with its action, or a tool call answered with a
// definitive outcome.
func wrote(status int, b []byte) bool {
	switch status {
	case http.StatusOK:
		return bytes.Contains(b, []byte(`"outcome":"confirmed"`)) || bytes.Contains(b, []byte(`"outcome":"rejected"`))
	case http.StatusCreated, http.StatusAccepted, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// writeGaps measures the longest time without any write answered, while
// measuring is on.
type writeGaps struct {
	mu        sync.Mutex
	measuring bool
	last      time.Time
	max       time.Duration
	maxEnd    time.Time
	// long are the gaps of at least longGap, by their end.
	long []gap
}

// gap is a time without any write answered.
type gap struct{ start, end time.Time }

// longGap is the shortest gap worth reporting with the event before it.
const longGap = 2 * time.Second

func (g *writeGaps) answered(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.measuring {
		return
	}
	if d := at.Sub(g.last); !g.last.IsZero() && d > g.max {
		g.max, g.maxEnd = d, at
	}
	if d := at.Sub(g.last); !g.last.IsZero() && d >= longGap {
		g.long = append(g.long, gap{start: g.last, end: at})
	}
	if at.After(g.last) {
		g.last = at
	}
}

// measure turns measuring on (from now) or off; off also counts the time
// since the last write as a gap.
func (g *writeGaps) measure(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if !on && g.measuring {
		if d := now.Sub(g.last); d > g.max {
			g.max, g.maxEnd = d, now
		}
	}
	g.measuring = on
	if on {
		g.last = now
	}
}

// gaps returns the gaps of at least longGap.
func (g *writeGaps) gaps() []gap {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.long)
}

// longest is the longest gap and when it ended.
func (g *writeGaps) longest() (time.Duration, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max, g.maxEnd
}
