package reconcile_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/payment"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// linkEnv is oncecall with payments through the Stripe adapter and, when
// twilio, SMS through the Twilio adapter, both against one simulator; the
// customer has a phone.
type linkEnv struct {
	remoteEnv
	customer uuid.UUID
}

const (
	linkPhone = "+15557654321"
	linkOrg   = "org_links"
)

// dashaArgs is a Dasha tool call of check_action_status with args.
func dashaArgs(args map[string]any) map[string]any {
	return map[string]any{
		"type": "ToolWebHookPayload", "status": "Running", "callId": "call-link", "agentId": "agent_link",
		"orgId": linkOrg, "toolName": "check_action_status", "arguments": args,
		"callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{},
	}
}

func setupLinks(t *testing.T, twilio bool) linkEnv {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{})
	p, err := stripeprovider.New(stripeprovider.Config{SecretKey: "sk_test_sim", BaseURL: sim.URL, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	set := provider.Set{provider.Payments: p, provider.Holds: p, provider.Links: p}
	var target atomic.Pointer[url.URL]
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httputil.NewSingleHostReverseProxy(target.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(public.Close)
	sid, token := sim.TwilioAccount()
	if twilio {
		tw, err := twilioprovider.New(twilioprovider.Config{
			AccountSID: sid, AuthToken: token, From: twilioFrom, BaseURL: sim.URL, PublicURL: public.URL, Timeout: 2 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		set[provider.Messaging] = tw
	}
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = set
		c.ReconcileDisabled = true
		c.OperatorToken = operatorToken
		c.StripeWebhookSecret = stripeWebhookSecret
		c.TwilioAuthToken, c.PublicURL = token, public.URL
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxChecks: 100}
	})
	u, _ := url.Parse(e.URL)
	target.Store(u)
	sim.SetStripeWebhook(e.URL+"/v1/providers/stripe/webhook", stripeWebhookSecret)
	tenant, key, err := e.Store.CreateTenant(t.Context(), "links", linkOrg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant.ID, Name: "Lin", Phone: linkPhone})
	if err != nil {
		t.Fatal(err)
	}
	return linkEnv{remoteEnv: remoteEnv{Env: e, sim: sim, key: key, tenant: tenant.ID}, customer: c.ID}
}

// linkIntent approves amount for the customer, to be paid by a link.
func (r linkEnv) linkIntent(t *testing.T, amount int) string {
	t.Helper()
	resp := r.Post("/v1/payment-intents", r.key, uuid.NewString(), map[string]any{
		"customer_id": r.customer, "amount": amount, "currency": "EUR", "description": "Spa day", "payment_method": "payment_link",
	})
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", resp.Status, resp.Body)
	}
	return resp.JSON(t)["result"].(map[string]any)["id"].(string)
}

func (r linkEnv) sendLink(t *testing.T, key, intent string) apptest.Response {
	t.Helper()
	return r.Post("/v1/payment-links", r.key, key, map[string]any{"payment_intent_id": intent})
}

// onlySession is the simulator's single Checkout Session.
func onlySession(t *testing.T, sim *simtest.Sim) providersim.StripeCheckoutSession {
	t.Helper()
	l := sim.StripeSessions()
	if len(l) != 1 {
		t.Fatalf("Stripe holds %d Checkout Sessions, want 1: %+v", len(l), l)
	}
	return l[0]
}

// linkSMS is the single SMS Twilio sent, which must carry the session's URL.
func linkSMS(t *testing.T, sim *simtest.Sim, cs providersim.StripeCheckoutSession) providersim.TwilioMessage {
	t.Helper()
	l := sim.TwilioLedger()
	if len(l) != 1 {
		t.Fatalf("Twilio holds %d messages, want 1: %+v", len(l), l)
	}
	if l[0].To != linkPhone || !strings.Contains(l[0].Body, cs.URL) || !strings.Contains(l[0].Body, "12.50 euros") {
		t.Fatalf("message %+v, want the link %s to %s", l[0], cs.URL, linkPhone)
	}
	return l[0]
}

// until runs reconciler passes until the action's state is want.
func (r linkEnv) until(t *testing.T, id, outcome string) map[string]any {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for {
		r.pass(t)
		a := r.action(t, id)
		if a["outcome"] == outcome {
			return a
		}
		if time.Now().After(end) {
			t.Fatalf("action %s not %s within 20s: %v", id, outcome, a)
		}
		<-time.After(10 * time.Millisecond) // poll interval: the loop waits for the outcome
	}
}

// A payment link: the Checkout Session is made for the intent's amount on
// the step's key, its URL goes to the customer's phone by one SMS through
// Twilio, and the action is pending (check_action_status says so) until
// Stripe's signed checkout.session.completed: then it is confirmed, the
// intent captured and one payment recorded with Stripe's PaymentIntent.
// Duplicate webhooks and more passes change nothing.
func TestStripePaymentLinkBySMSIsPendingUntilPaid(t *testing.T) {
	t.Parallel()
	r := setupLinks(t, true)
	intent := r.linkIntent(t, 1250)
	if n := r.Count("SELECT count(*) FROM action_steps"); n != 0 {
		t.Fatalf("approving an intent paid by link made %d steps, want none (nothing is held)", n)
	}
	resp := r.sendLink(t, "link-1", intent)
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send link: %d %s, want 202 pending", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	cs := onlySession(t, r.sim)
	var key string
	if err := r.Store.Pool().QueryRow(t.Context(), "SELECT provider_key FROM action_steps WHERE action_id = $1 AND name = $2",
		uuid.MustParse(id), payment.SessionStep).Scan(&key); err != nil {
		t.Fatal(err)
	}
	if cs.AmountTotal != 1250 || cs.Currency != "eur" || cs.Status != "open" || cs.Metadata[stripeprovider.MetaKey] != key ||
		cs.Metadata[stripeprovider.MetaAction] != id || cs.Metadata[stripeprovider.MetaStep] != provider.Links ||
		cs.Metadata[stripeprovider.MetaIntent] != intent {
		t.Fatalf("session %+v, want 1250 EUR for intent %s under key %s", cs, intent, key)
	}
	linkSMS(t, r.sim, cs)
	if a := r.action(t, id); a["state"] == "completed" {
		t.Fatalf("a link nobody paid is %v", a)
	}
	// The voice agent asks: pending, not confirmed.
	status := r.Post("/v1/dasha/tools/check_action_status", r.key, "", dashaArgs(map[string]any{"action_id": id}))
	if status.Status != http.StatusOK || !strings.Contains(string(status.Body), `"outcome":"pending"`) {
		t.Fatalf("check_action_status before payment: %d %s", status.Status, status.Body)
	}
	r.pass(t)
	if n := r.Count("SELECT count(*) FROM payments"); n != 0 {
		t.Fatal("a payment exists before the customer paid")
	}

	r.sim.StripePay(cs.ID)
	a := r.until(t, id, "confirmed")
	paid := onlySession(t, r.sim)
	piID, _ := paid.PaymentIntent.(string)
	result := a["result"].(map[string]any)
	if result["checkout_session"] != cs.ID || result["provider_ref"] != piID || result["status"] != "paid" || result["amount"] != float64(1250) {
		t.Fatalf("confirmed result %v, want the session %s paid by %s", result, cs.ID, piID)
	}
	if n := r.Count("SELECT count(*) FROM payments WHERE provider_ref = $1 AND status = 'succeeded' AND amount = 1250", piID); n != 1 {
		t.Fatalf("%d payments carry %s, want 1", n, piID)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'captured' AND charging_action_id IS NULL", intent); n != 1 {
		t.Fatal("the intent is not captured")
	}
	// Stripe delivers again: acknowledged, nothing changes.
	r.sim.ResendStripeEvent("checkout.session.completed", cs.ID)
	r.pass(t)
	if n := r.Count("SELECT count(*) FROM payments"); n != 1 {
		t.Fatalf("%d payments after a duplicate webhook", n)
	}
	linkSMS(t, r.sim, cs)
	onlySession(t, r.sim)
	// The same link again replays; a new key finds the intent paid.
	if again := r.sendLink(t, "link-1", intent); again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.Status, again.Body)
	}
	if got := reason(t, r.sendLink(t, "link-2", intent)); got != payment.AlreadyCaptured {
		t.Fatalf("a second link of a paid intent: %s", got)
	}
	// The intent is paid by link only: a card charge is refused.
	onlySession(t, r.sim)
}

// A link that expires unpaid rejects the action PAYMENT_LINK_EXPIRED and
// releases the intent, which can be sent a new link.
func TestStripePaymentLinkExpiredIsRejected(t *testing.T) {
	t.Parallel()
	r := setupLinks(t, true)
	intent := r.linkIntent(t, 1250)
	resp := r.sendLink(t, "link-expire", intent)
	id := resp.JSON(t)["action_id"].(string)
	cs := onlySession(t, r.sim)
	r.sim.StripeExpire(cs.ID)
	a := r.until(t, id, "rejected")
	if a["reason"] != payment.LinkExpired {
		t.Fatalf("expired link: %v", a)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'requires_capture' AND charging_action_id IS NULL", intent); n != 1 {
		t.Fatal("the intent of an expired link is not free for another")
	}
	if n := r.Count("SELECT count(*) FROM payments"); n != 0 {
		t.Fatal("a payment exists for an expired link")
	}
	// A card charge of it is refused: it is paid by link.
	if got := reason(t, r.Post("/v1/payments", r.key, "card", map[string]any{"payment_intent_id": intent})); got != payment.PaidByLinkOnly {
		t.Fatalf("card charge of a link intent: %s", got)
	}
}

// The crash window: the session's answer is lost (Stripe makes it after
// oncecall gave up). The action is pending with no SMS sent; the
// reconciler re-sends under the same key, Stripe replays the session, and
// the SMS goes once: one session, one SMS, then paid once.
func TestStripePaymentLinkLostSessionAnswerMakesOneSessionAndOneSMS(t *testing.T) {
	t.Parallel()
	r := setupLinks(t, true)
	intent := r.linkIntent(t, 1250)
	lose(t, r.sim, providersim.OnWrite)
	resp := r.sendLink(t, "link-lost", intent)
	if resp.Status != http.StatusAccepted {
		t.Fatalf("send link with the session's answer lost: %d %s", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	if n := len(r.sim.TwilioLedger()); n != 0 {
		t.Fatalf("%d SMS sent before the session was known", n)
	}
	waitFor(t, "the session the lost request made", 10*time.Second, func() bool { return len(r.sim.StripeSessions()) == 1 })
	waitFor(t, "the SMS", 20*time.Second, func() bool {
		r.pass(t)
		return len(r.sim.TwilioLedger()) == 1
	})
	cs := onlySession(t, r.sim)
	linkSMS(t, r.sim, cs)
	for range 3 {
		r.pass(t)
	}
	onlySession(t, r.sim)
	linkSMS(t, r.sim, cs)
	r.sim.StripePay(cs.ID)
	r.until(t, id, "confirmed")
	if n := r.Count("SELECT count(*) FROM payments WHERE status = 'succeeded'"); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
}

// With messaging local, nothing would send the link's SMS (oncecall's
// outbox is no gateway): the link is refused MESSAGING_NOT_CONFIGURED before
// any Checkout Session or SMS is made, and the intent stays free.
func TestStripePaymentLinkWithLocalMessagingIsRefused(t *testing.T) {
	t.Parallel()
	r := setupLinks(t, false)
	intent := r.linkIntent(t, 1250)
	resp := r.sendLink(t, "link-local", intent)
	if resp.Status != http.StatusUnprocessableEntity || resp.JSON(t)["code"] != payment.MessagingNotConfigured {
		t.Fatalf("a link with local messaging: %d %s", resp.Status, resp.Body)
	}
	if n := len(r.sim.StripeSessions()); n != 0 {
		t.Fatalf("%d Checkout Sessions made", n)
	}
	if n := r.Count("SELECT count(*) FROM messages") + r.Count("SELECT count(*) FROM action_steps"); n != 0 {
		t.Fatalf("%d outbox rows or steps, want none", n)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND charging_action_id IS NULL", intent); n != 1 {
		t.Fatal("the refused link holds the intent")
	}
}

// A forged signature is 401 and changes nothing; an event about a session
// oncecall did not make is acknowledged unmatched.
func TestStripePaymentLinkWebhooksForgedAndUnknown(t *testing.T) {
	t.Parallel()
	r := setupLinks(t, true)
	intent := r.linkIntent(t, 1250)
	id := r.sendLink(t, "link-forged", intent).JSON(t)["action_id"].(string)
	cs := onlySession(t, r.sim)
	events := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1", id)
	obj := map[string]any{"id": cs.ID, "object": "checkout.session", "status": "complete", "payment_status": "paid",
		"metadata": map[string]string{stripeprovider.MetaAction: id, stripeprovider.MetaStep: provider.Links}}
	body, header := signedEvent(t, "whsec_forged", "evt_forged", "checkout.session.completed", obj)
	forged := r.Request(http.MethodPost, "/v1/providers/stripe/webhook", "", body, "Stripe-Signature", header)
	if forged.Status != http.StatusUnauthorized {
		t.Fatalf("forged webhook: %d %s", forged.Status, forged.Body)
	}
	if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1", id); n != events {
		t.Fatal("a forged webhook changed the timeline")
	}
	unknown := map[string]any{"id": "cs_unknown", "object": "checkout.session", "status": "complete",
		"metadata": map[string]string{stripeprovider.MetaAction: uuid.NewString(), stripeprovider.MetaStep: provider.Links}}
	body, header = signedEvent(t, stripeWebhookSecret, "evt_unknown", "checkout.session.completed", unknown)
	resp := r.Request(http.MethodPost, "/v1/providers/stripe/webhook", "", body, "Stripe-Signature", header)
	if resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), `"matched":false`) {
		t.Fatalf("unknown session: %d %s", resp.Status, resp.Body)
	}
	if a := r.action(t, id); a["state"] == "completed" {
		t.Fatalf("webhooks alone settled the link: %v", a)
	}
	r.pass(t)
	if a := r.action(t, id); a["state"] == "completed" {
		t.Fatalf("a link nobody paid completed: %v", a)
	}
}

// Without Stripe a payment link is rejected, nothing sent.
func TestStripePaymentLinkWithoutStripeIsRejected(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tenant, key := e.Tenant("local")
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant.ID, Name: "Lin", Phone: linkPhone})
	if err != nil {
		t.Fatal(err)
	}
	approved := e.Post("/v1/payment-intents", key, "approve-local", map[string]any{"customer_id": c.ID, "amount": 500, "currency": "EUR", "payment_method": "payment_link"})
	intent := approved.JSON(t)["result"].(map[string]any)["id"].(string)
	resp := e.Post("/v1/payment-links", key, "local-link", map[string]any{"payment_intent_id": intent})
	if got := reason(t, resp); got != payment.LinksNeedStripe {
		t.Fatalf("link without Stripe: %s", got)
	}
	if n := e.Count("SELECT count(*) FROM messages") + e.Count("SELECT count(*) FROM action_steps"); n != 0 {
		t.Fatalf("a rejected link left %d messages or steps", n)
	}
}
