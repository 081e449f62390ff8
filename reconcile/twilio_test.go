package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

const twilioFrom = "+15005550006"

// twilioEnv is oncecall with messaging served by the Twilio adapter against
// the simulator's Twilio mode; Twilio's status callbacks reach oncecall
// through public, a proxy standing for its public URL.
type twilioEnv struct {
	remoteEnv
	public   string
	customer uuid.UUID
}

// setupTwilio starts it with the given visibility delay and callback
// faults; the reconciler is driven by the test.
func setupTwilio(t *testing.T, delay time.Duration, cb providersim.TwilioCallbacks) twilioEnv {
	t.Helper()
	return setupTwilioWith(t, delay, cb, false, nil)
}

// setupTwilioWith is setupTwilio with the calendar, when remoteCalendar,
// on the simulator's JSON protocol, and the twilio mode's delivery.
func setupTwilioWith(t *testing.T, delay time.Duration, cb providersim.TwilioCallbacks, remoteCalendar bool, delivery *providersim.TwilioDelivery) twilioEnv {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	sim.SetTwilioCallbacks(cb)
	if delivery != nil {
		sim.SetTwilioDelivery(*delivery)
	}
	var target atomic.Pointer[url.URL]
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httputil.NewSingleHostReverseProxy(target.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	sid, token := sim.TwilioAccount()
	p, err := twilioprovider.New(twilioprovider.Config{
		AccountSID: sid, AuthToken: token, From: twilioFrom, BaseURL: sim.URL, PublicURL: proxy.URL,
		Timeout: 2 * time.Second, VisibilityDelay: delay,
	})
	if err != nil {
		t.Fatal(err)
	}
	set := provider.Set{provider.Messaging: p}
	if remoteCalendar {
		set[provider.Calendar] = provider.NewHTTP(provider.HTTPConfig{BaseURL: sim.URL, Timeout: 2 * time.Second, Traits: keyed()})
	}
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = set
		c.ReconcileDisabled = true
		c.OperatorToken = operatorToken
		c.TwilioAuthToken, c.PublicURL = token, proxy.URL
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxChecks: 100}
	})
	u, _ := url.Parse(e.URL)
	target.Store(u)
	tenant, key := e.Tenant("twilio")
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant.ID, Name: "Ada", Phone: "+15551234567"})
	if err != nil {
		t.Fatal(err)
	}
	return twilioEnv{remoteEnv: remoteEnv{Env: e, sim: sim, key: key, tenant: tenant.ID}, public: proxy.URL, customer: c.ID}
}

// sms asks for one SMS to the customer.
func (r twilioEnv) sms(t *testing.T, idemKey string) apptest.Response {
	t.Helper()
	return r.Post("/v1/messages", r.key, idemKey, map[string]any{
		"customer_id": r.customer, "channel": "sms", "template": "generic", "variables": map[string]string{"body": "See you at 9."},
	})
}

// onlySMS is the simulated Twilio's single message, sent to the customer.
func onlySMS(t *testing.T, sim *simtest.Sim) providersim.TwilioMessage {
	t.Helper()
	l := sim.TwilioLedger()
	if len(l) != 1 {
		t.Fatalf("Twilio holds %d messages, want 1: %+v", len(l), l)
	}
	if l[0].To != "+15551234567" || l[0].From != twilioFrom || l[0].Body != "See you at 9." {
		t.Fatalf("message %+v, want the customer's text", l[0])
	}
	return l[0]
}

// stepOf is the message step's state, provider reference and checks.
func (r twilioEnv) stepOf(t *testing.T, action string) string {
	t.Helper()
	var s string
	err := r.Store.Pool().QueryRow(context.Background(), `SELECT a.state || '/' || coalesce(a.outcome, '') || '/' || st.state
		|| '/' || coalesce(st.provider_ref, '') || '/' || st.attempts || '/' || st.version
		|| '/' || (SELECT count(*) FROM action_events e WHERE e.action_id = a.id)
		FROM actions a JOIN action_steps st ON st.action_id = a.id WHERE a.id = $1`, action).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An SMS through Twilio is sent once and confirmed with its SID; the
// callbacks that follow find the step settled and change nothing.
func TestTwilioSMSIsSentOnceAndConfirmed(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, time.Minute, providersim.TwilioCallbacks{})
	resp := r.sms(t, "twilio-send")
	if resp.Status != http.StatusCreated {
		t.Fatalf("send: %d %s, want 201", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	m := onlySMS(t, r.sim)
	if !strings.HasPrefix(m.StatusCallback, r.public+twilioprovider.StatusPath+"?step="+id) {
		t.Fatalf("status callback %q, want the step's under %s", m.StatusCallback, r.public)
	}
	waitFor(t, "Twilio's callbacks", 10*time.Second, func() bool { return onlySMS(t, r.sim).Callbacks == 2 })
	if got := r.stepOf(t, id); !strings.HasPrefix(got, "completed/confirmed/succeeded/"+m.SID+"/1/") {
		t.Fatalf("step %s, want confirmed with %s after one send", got, m.SID)
	}
	if again := r.sms(t, "twilio-send"); again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s", again.Status, again.Body)
	}
	onlySMS(t, r.sim)
}

// The answer is lost after Twilio created the message: the caller hears
// pending; Twilio's signed callback names the message, and the next check
// confirms it by that SID even though Twilio's list would not be
// conclusive for an hour. Still one SMS.
func TestTwilioLostAnswerIsPendingThenSettledByTheCallback(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, time.Hour, providersim.TwilioCallbacks{})
	r.sim.Fault(provider.Messaging, providersim.FaultDropResponse, 1)
	resp := r.sms(t, "twilio-lost")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send with its answer lost: %d %s, want 202 pending", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	m := onlySMS(t, r.sim)
	waitFor(t, "the callback to name the message", 10*time.Second, func() bool {
		return r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND provider_ref = $2", id, m.SID) == 1
	})
	a := r.untilConfirmed(t, id, 20*time.Second)
	if a["provider_ref"] != m.SID && fmt.Sprint(a["result"]) == "" {
		t.Fatalf("confirmed action %v does not carry %s", a, m.SID)
	}
	if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'provider_notice'", id); n < 1 {
		t.Fatal("the callback is not in the timeline")
	}
	onlySMS(t, r.sim)
}

// A 500 after Twilio created the message, with no callback at all: the
// message is found by recipient and text once lookups can see it, never
// sent again.
func TestTwilio500AfterCreateIsFoundByLookupNotResent(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, 200*time.Millisecond, providersim.TwilioCallbacks{Off: true})
	r.sim.Fault(provider.Messaging, providersim.FaultFailAfterCommit, 1)
	resp := r.sms(t, "twilio-500")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send answered 500: %d %s, want 202 pending", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	r.untilConfirmed(t, id, 20*time.Second)
	m := onlySMS(t, r.sim)
	if got := r.stepOf(t, id); !strings.HasPrefix(got, "completed/confirmed/succeeded/"+m.SID+"/1/") {
		t.Fatalf("step %s, want confirmed with %s after one send", got, m.SID)
	}
}

// Before the visibility delay, Twilio not listing the message proves
// nothing: the action stays pending through every check and nothing is
// sent again.
func TestTwilioNotFoundBeforeTheVisibilityDelayStaysPending(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, time.Hour, providersim.TwilioCallbacks{Off: true})
	if _, err := r.sim.Admin.AddFault(t.Context(), providersim.Rule{Capability: provider.Messaging, Fault: "lookup_lag=1h", Count: 1, On: providersim.OnWrite}); err != nil {
		t.Fatal(err)
	}
	r.sim.Fault(provider.Messaging, providersim.FaultDropResponse, 1)
	resp := r.sms(t, "twilio-unseen")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send with its answer lost: %d %s", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	for range 5 {
		r.pass(t)
	}
	if a := r.action(t, id); a["outcome"] != "pending" {
		t.Fatalf("action %v, want pending", a)
	}
	if n := r.Count("SELECT checks FROM action_steps WHERE action_id = $1", id); n < 1 {
		t.Fatalf("%d checks, want the lookups counted", n)
	}
	if n := r.Count("SELECT attempts FROM action_steps WHERE action_id = $1", id); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
	onlySMS(t, r.sim)
}

// Twilio's callbacks twice over and before its API answers: the action is
// confirmed once, from the API's answer, and the late duplicates match
// nothing.
func TestTwilioDuplicateAndEarlyCallbacksChangeNothing(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, time.Minute, providersim.TwilioCallbacks{Duplicate: true, BeforeAnswer: true})
	resp := r.sms(t, "twilio-early")
	if resp.Status != http.StatusCreated {
		t.Fatalf("send: %d %s, want 201", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	m := onlySMS(t, r.sim)
	if m.Callbacks != 4 {
		t.Fatalf("%d callbacks delivered, want 4 before the answer", m.Callbacks)
	}
	settled := r.stepOf(t, id)
	if !strings.HasPrefix(settled, "completed/confirmed/succeeded/"+m.SID+"/1/") {
		t.Fatalf("step %s, want confirmed with %s after one send", settled, m.SID)
	}
	for range 3 {
		r.pass(t)
	}
	if got := r.stepOf(t, id); got != settled {
		t.Fatalf("callbacks changed a settled step: %s -> %s", settled, got)
	}
	onlySMS(t, r.sim)
}

// A forged callback is 401 and changes nothing; a verified one about a
// SID Twilio never sent for this step, or naming no step of oncecall's,
// is acknowledged and changes nothing.
func TestTwilioForgedAndStrayCallbacksChangeNothing(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, time.Hour, providersim.TwilioCallbacks{Off: true})
	if _, err := r.sim.Admin.AddFault(t.Context(), providersim.Rule{Capability: provider.Messaging, Fault: "lookup_lag=1h", Count: 1, On: providersim.OnWrite}); err != nil {
		t.Fatal(err)
	}
	r.sim.Fault(provider.Messaging, providersim.FaultDropResponse, 1)
	resp := r.sms(t, "twilio-forged")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send with its answer lost: %d %s", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	m := onlySMS(t, r.sim)
	var stepName string
	if err := r.Store.Pool().QueryRow(t.Context(), "SELECT name FROM action_steps WHERE action_id = $1", id).Scan(&stepName); err != nil {
		t.Fatal(err)
	}
	before := r.stepOf(t, id)
	path := twilioprovider.StatusPath + "?" + url.Values{twilioprovider.StepParam: {id + "/" + stepName}}.Encode()
	form := url.Values{"MessageSid": {m.SID}, "MessageStatus": {"delivered"}, "To": {m.To}}
	_, token := r.sim.TwilioAccount()
	for _, sig := range []string{
		"", providersim.TwilioSignature("not-the-token", r.public+path, form),
		providersim.TwilioSignature(token, "https://elsewhere.example"+path, form),
	} {
		got := r.Request(http.MethodPost, path, "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded", "X-Twilio-Signature", sig)
		if got.Status != http.StatusUnauthorized {
			t.Fatalf("forged callback answered %d %s, want 401", got.Status, got.Body)
		}
	}
	if after := r.stepOf(t, id); after != before {
		t.Fatalf("a forged callback changed the step: %s -> %s", before, after)
	}
	for _, target := range []string{
		r.public + twilioprovider.StatusPath + "?" + url.Values{twilioprovider.StepParam: {uuid.NewString() + "/" + stepName}}.Encode(),
		r.public + twilioprovider.StatusPath,
	} {
		status, err := r.sim.Admin.TwilioStrayCallback(t.Context(), target)
		if err != nil || status != http.StatusOK {
			t.Fatalf("stray callback to %s answered %d (%v), want 200", target, status, err)
		}
	}
	if after := r.stepOf(t, id); after != before {
		t.Fatalf("a stray callback changed the step: %s -> %s", before, after)
	}
	onlySMS(t, r.sim)
}

// oncecall serve, a real process, is killed (SIGKILL) while Twilio is
// creating the message and before it records any answer; a new process's
// reconciler finds the message Twilio created after the kill: one SMS.
func TestTwilioKilledWorkerSendsOneSMSAfterRestart(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	sim.Fault(provider.Messaging, "delay=2s", 1)
	dbURL := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := db.New(pool)
	tenant, key, err := store.CreateTenant(t.Context(), "twilio-crash", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant.ID, Name: "Ada", Phone: "+15551234567"})
	if err != nil {
		t.Fatal(err)
	}
	bin := buildOncecall(t)
	sid, token := sim.TwilioAccount()
	env := []string{
		"DATABASE_URL=" + dbURL, "ONCECALL_PROVIDER_MESSAGING=twilio", "ONCECALL_PROVIDER_MESSAGING_URL=" + sim.URL,
		"TWILIO_ACCOUNT_SID=" + sid, "TWILIO_AUTH_TOKEN=" + token, "TWILIO_FROM=" + twilioFrom,
		"ONCECALL_PROVIDER_MESSAGING_TIMEOUT=5s", "ONCECALL_PROVIDER_MESSAGING_VISIBILITY_DELAY=1s",
		"ONCECALL_LEASE=1s", "ONCECALL_RECONCILE_INTERVAL=100ms", "ONCECALL_RATE_LIMIT=0", "ONCECALL_PRUNE_INTERVAL=0",
	}
	first := startOncecall(t, bin, append(env, "ONCECALL_NO_RECONCILE=true")...)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, first.url+"/v1/messages", strings.NewReader(fmt.Sprintf(
			`{"customer_id":%q,"channel":"sms","template":"generic","variables":{"body":"See you at 9."}}`, c.ID)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "kill-sms")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close() // the process is killed first
		}
	}()
	waitFor(t, "the message to reach Twilio", 20*time.Second, func() bool { return inFlight(t, sim.URL) > 0 })
	first.kill()
	waitFor(t, "Twilio to create the message", 20*time.Second, func() bool { return len(sim.TwilioLedger()) == 1 })
	var state string
	if err := pool.QueryRow(context.Background(), "SELECT state FROM actions WHERE idempotency_key = 'kill-sms'").Scan(&state); err != nil || state != "running" {
		t.Fatalf("after the kill the action is %q (%v), want running", state, err)
	}
	startOncecall(t, bin, env...)
	waitFor(t, "the reconciler to confirm the message", 30*time.Second, func() bool {
		var outcome *string
		err := pool.QueryRow(context.Background(), "SELECT outcome FROM actions WHERE idempotency_key = 'kill-sms'").Scan(&outcome)
		return err == nil && outcome != nil && *outcome == "confirmed"
	})
	m := onlySMS(t, sim)
	var ref string
	var attempts int
	if err := pool.QueryRow(context.Background(), "SELECT provider_ref, attempts FROM action_steps").Scan(&ref, &attempts); err != nil || ref != m.SID {
		t.Fatalf("step carries %q after %d recorded sends (%v), want %s", ref, attempts, err, m.SID)
	}
}

// A booking's confirmation SMS, with the calendar local or remote, is
// rendered when the booking is claimed and sent through Twilio once, to
// the customer's number, after the booking exists.
func TestTwilioBookingConfirmationIsRenderedAndSentOnce(t *testing.T) {
	t.Parallel()
	for _, remote := range []bool{false, true} {
		t.Run(fmt.Sprintf("remote_calendar=%v", remote), func(t *testing.T) {
			t.Parallel()
			r := setupTwilioWith(t, time.Minute, providersim.TwilioCallbacks{}, remote, nil)
			resp := r.Post("/v1/appointments", r.key, "twilio-book", map[string]any{
				"customer_id": r.customer, "slot_id": r.Slot(r.tenant, 1), "notify": "sms",
			})
			if resp.Status != http.StatusCreated {
				t.Fatalf("book: %d %s", resp.Status, resp.Body)
			}
			id := resp.JSON(t)["action_id"].(string)
			waitFor(t, "the confirmation to be sent", 20*time.Second, func() bool {
				r.pass(t)
				return r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND name = 'messaging.confirmation' AND state = 'succeeded'", id) == 1
			})
			l := r.sim.TwilioLedger()
			if len(l) != 1 || l[0].To != "+15551234567" || !strings.Contains(l[0].Body, "Ada") {
				t.Fatalf("Twilio holds %+v, want one confirmation to Ada's number", l)
			}
			for range 3 {
				r.pass(t)
			}
			if n := len(r.sim.TwilioLedger()); n != 1 {
				t.Fatalf("Twilio holds %d messages, want 1", n)
			}
		})
	}
}

// Each tenant's SMS go from its own sender: a number, a Messaging Service,
// or the process default for a tenant without one. The sender is read at
// the claim and kept with the step.
func TestTwilioTenantsSendFromTheirOwnSender(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, time.Minute, providersim.TwilioCallbacks{})
	own, ownKey := r.Tenant("own-number")
	svc, svcKey := r.Tenant("own-service")
	const service = "MG0123456789abcdef0123456789abcdef"
	if err := r.Store.SetTenantTwilioSender(t.Context(), own.ID, db.TwilioSender{From: "+14155550100"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Store.SetTenantTwilioSender(t.Context(), svc.ID, db.TwilioSender{MessagingService: service}); err != nil {
		t.Fatal(err)
	}
	send := func(key, to string) {
		t.Helper()
		resp := r.Post("/v1/messages", key, "sender-"+to, map[string]any{
			"to": to, "channel": "sms", "template": "generic", "variables": map[string]string{"body": "Hi"},
		})
		if resp.Status != http.StatusCreated {
			t.Fatalf("send: %d %s", resp.Status, resp.Body)
		}
	}
	send(ownKey, "+15550100001")
	send(svcKey, "+15550100002")
	send(r.key, "+15550100003")
	got := map[string]string{}
	for _, m := range r.sim.TwilioLedger() {
		got[m.To] = m.From + "/" + m.MessagingServiceSID
	}
	want := map[string]string{"+15550100001": "+14155550100/", "+15550100002": "/" + service, "+15550100003": twilioFrom + "/"}
	for to, w := range want {
		if got[to] != w {
			t.Errorf("message to %s sent by %q, want %q", to, got[to], w)
		}
	}
}

// A message Twilio keeps queued (no date_sent yet) after a 500: past the
// visibility delay the search finds it by when it was created, and the
// action is confirmed with it. One SMS.
func TestTwilioQueuedSMSIsFoundNotResent(t *testing.T) {
	t.Parallel()
	r := setupTwilioWith(t, 200*time.Millisecond, providersim.TwilioCallbacks{Off: true}, false, &providersim.TwilioDelivery{Queued: true})
	r.sim.Fault(provider.Messaging, providersim.FaultFailAfterCommit, 1)
	resp := r.sms(t, "twilio-queued")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send answered 500: %d %s, want 202 pending", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	r.untilConfirmed(t, id, 30*time.Second)
	m := onlySMS(t, r.sim)
	if m.Status != "queued" || m.DateSent != nil {
		t.Fatalf("message %+v, want still queued", m)
	}
	if got := r.stepOf(t, id); !strings.HasPrefix(got, "completed/confirmed/succeeded/"+m.SID+"/1/") {
		t.Fatalf("step %s, want confirmed with %s after one send", got, m.SID)
	}
}

// A lost answer for a text with a link, which Twilio stored shortened and
// keeps queued: nothing proves the step's message is not the one Twilio
// holds, so it is never sent again, past the visibility delay too; the
// action stays pending until its checks run out and an operator decides.
func TestTwilioRewrittenSMSIsNotResentAndGoesToAnOperator(t *testing.T) {
	t.Parallel()
	r := setupTwilioWith(t, 200*time.Millisecond, providersim.TwilioCallbacks{Off: true}, false,
		&providersim.TwilioDelivery{Queued: true, ShortenLinks: true})
	r.sim.Fault(provider.Messaging, providersim.FaultDropResponse, 1)
	resp := r.Post("/v1/messages", r.key, "twilio-link", map[string]any{
		"customer_id": r.customer, "channel": "sms", "template": "generic",
		"variables": map[string]string{"body": "Pay here: https://pay.example/p/a1b2c3 thank you"},
	})
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send with its answer lost: %d %s, want 202 pending", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	sent := time.Now()
	// 100 checks back off for at least 4.8s, well past the last send's
	// settling (its 2s call timeout and the 200ms delay).
	waitFor(t, "the operator's turn", 60*time.Second, func() bool {
		r.pass(t)
		if n := len(r.sim.TwilioLedger()); n != 1 {
			t.Fatalf("Twilio holds %d messages %v after the send: the SMS was sent again", n, time.Since(sent))
		}
		return r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator", id) == 1
	})
	if settled := 2200 * time.Millisecond; time.Since(sent) < settled {
		t.Fatalf("the checks ran out %v after the send, before it settled (%v)", time.Since(sent), settled)
	}
	l := r.sim.TwilioLedger()
	if len(l) != 1 || strings.Contains(l[0].Body, "pay.example") {
		t.Fatalf("Twilio holds %+v, want the one message, its link shortened", l)
	}
	if a := r.action(t, id); a["outcome"] != "pending" {
		t.Fatalf("action %v, want pending", a)
	}
	if n := r.Count("SELECT attempts FROM action_steps WHERE action_id = $1", id); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
	if n := r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND last_error LIKE '%may be this one%'", id); n != 1 {
		t.Fatal("the step does not say why it is not sent again")
	}
}

// A send that certainly created nothing (Twilio's 503 before the message)
// is answered ambiguously: once the visibility delay has passed, Twilio's
// whole list for the recipient and sender shows nothing since the claim,
// and the message is sent. One SMS.
func TestTwilioAbsenceShownByTheWholeListIsSentOnce(t *testing.T) {
	t.Parallel()
	r := setupTwilio(t, 200*time.Millisecond, providersim.TwilioCallbacks{Off: true})
	r.sim.Fault(provider.Messaging, providersim.FaultFailBeforeCommit, 1)
	resp := r.sms(t, "twilio-absent")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send answered 503: %d %s, want 202 pending", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	if n := len(r.sim.TwilioLedger()); n != 0 {
		t.Fatalf("Twilio holds %d messages before the re-send, want none", n)
	}
	r.untilConfirmed(t, id, 30*time.Second)
	m := onlySMS(t, r.sim)
	if got := r.stepOf(t, id); !strings.HasPrefix(got, "completed/confirmed/succeeded/"+m.SID+"/2/") {
		t.Fatalf("step %s, want confirmed with %s after the second send", got, m.SID)
	}
}
