package reconcile_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// setupStripeHolds is setupStripe with the adapter also holding at
// approval time (provider.Holds) and making payment links, as `oncecall
// serve` wires it.
func setupStripeHolds(t *testing.T, simCfg providersim.Config) remoteEnv {
	t.Helper()
	sim := simtest.Start(t, simCfg)
	p, err := stripeprovider.New(stripeprovider.Config{SecretKey: "sk_test_sim", BaseURL: sim.URL, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Payments: p, provider.Holds: p, provider.Links: p}
		c.ReconcileDisabled = true
		c.OperatorToken = operatorToken
		c.StripeWebhookSecret = stripeWebhookSecret
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxChecks: 100}
	})
	sim.SetStripeWebhook(e.URL+"/v1/providers/stripe/webhook", stripeWebhookSecret)
	tenant, key := e.Tenant("stripe")
	return remoteEnv{Env: e, sim: sim, key: key, tenant: tenant.ID}
}

// approve approves amount for a new customer of the tenant with apiKey and
// returns the answer.
func (r remoteEnv) approve(t *testing.T, apiKey string, tenant uuid.UUID, idemKey string, amount int, method string) apptest.Response {
	t.Helper()
	return r.Post("/v1/payment-intents", apiKey, idemKey, map[string]any{
		"customer_id": r.Customer(tenant), "amount": amount, "currency": "EUR", "payment_method": method,
	})
}

// An approval is a hold at Stripe: a PaymentIntent with manual capture made
// by the approval's step under its provider key, with the action and step
// in metadata; the intent records it and its capture_before. The charge
// captures the hold (a smaller amount here): one PaymentIntent, captured
// once, for the charged amount.
func TestStripeHoldAtApprovalIsCapturedByTheCharge(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	resp := r.approve(t, r.key, r.tenant, "hold-approve", 5000, "pm_card_ok")
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", resp.Status, resp.Body)
	}
	answer := resp.JSON(t)
	approval := answer["action_id"].(string)
	result := answer["result"].(map[string]any)
	intent := result["id"].(string)
	held := onlyPaymentIntent(t, r.sim)
	if held.Status != "requires_capture" || held.CaptureMethod != "manual" || held.AmountCapturable != 5000 || held.Captures != 0 {
		t.Fatalf("PaymentIntent after the approval %+v, want a manual-capture hold of 5000", held)
	}
	if result["provider_ref"] != held.ID || result["status"] != "requires_capture" {
		t.Fatalf("approval's answer %v, want the hold %s awaiting capture", result, held.ID)
	}
	var stepKey string
	if err := r.Store.Pool().QueryRow(t.Context(), "SELECT provider_key FROM action_steps WHERE action_id = $1 AND name = $2",
		uuid.MustParse(approval), provider.Holds).Scan(&stepKey); err != nil {
		t.Fatal(err)
	}
	if held.Metadata[stripeprovider.MetaKey] != stepKey || held.Metadata[stripeprovider.MetaAction] != approval ||
		held.Metadata[stripeprovider.MetaStep] != provider.Holds || held.Metadata[stripeprovider.MetaIntent] != intent {
		t.Fatalf("hold metadata %v, want the approval %s, its step and key %s", held.Metadata, approval, stepKey)
	}
	var captureBefore time.Time
	if err := r.Store.Pool().QueryRow(t.Context(), "SELECT capture_before FROM payment_intents WHERE id = $1 AND hold_ref = $2",
		uuid.MustParse(intent), held.ID).Scan(&captureBefore); err != nil {
		t.Fatalf("the intent does not record the hold %s: %v", held.ID, err)
	}
	if want := held.LatestCharge.PaymentMethodDetails.Card.CaptureBefore; captureBefore.Unix() != want {
		t.Fatalf("capture_before %v, want Stripe's %v", captureBefore, time.Unix(want, 0))
	}
	// A hold a week from its deadline is not an operator's concern.
	r.pass(t)
	if n := r.Count("SELECT count(*) FROM actions WHERE needs_operator"); n != 0 {
		t.Fatalf("%d actions flagged for an operator with a fresh hold", n)
	}

	charged := r.Post("/v1/payments", r.key, "hold-charge", map[string]any{"payment_intent_id": intent, "amount": 3500})
	if charged.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", charged.Status, charged.Body)
	}
	pi := onlyPaymentIntent(t, r.sim)
	if pi.ID != held.ID || pi.Captures != 1 || pi.AmountReceived != 3500 || pi.Status != "succeeded" ||
		pi.Metadata[stripeprovider.MetaChargeAction] != charged.JSON(t)["action_id"] {
		t.Fatalf("PaymentIntent after the charge %+v, want the hold captured once for 3500", pi)
	}
	if n := r.Count("SELECT count(*) FROM payments WHERE provider_ref = $1 AND status = 'succeeded' AND amount = 3500", pi.ID); n != 1 {
		t.Fatalf("%d local payments carry %s, want 1", n, pi.ID)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'captured'", intent); n != 1 {
		t.Fatal("the intent is not recorded as captured")
	}
}

// A hold the card refuses rejects the approval: nothing is held (Stripe's
// PaymentIntent is cancelled) and no intent exists to charge.
func TestStripeDeclinedHoldRejectsTheApproval(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	if got := reason(t, r.approve(t, r.key, r.tenant, "hold-declined", 900, "pm_card_declined")); got != "PAYMENT_DECLINED" {
		t.Fatalf("declined hold: %s", got)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Status != "canceled" || pi.Captures != 0 {
		t.Fatalf("PaymentIntent %+v, want the refused hold canceled", pi)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents"); n != 0 {
		t.Fatalf("%d intents recorded for a refused hold", n)
	}
}

// An approval whose hold answer is lost is pending, never confirmed; the
// reconciler re-sends under the same key, Stripe replays the hold, and the
// intent is recorded once: one PaymentIntent.
func TestStripeLostHoldAnswerIsPendingThenOneHold(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	lose(t, r.sim, providersim.OnWrite)
	first := r.approve(t, r.key, r.tenant, "hold-lost", 2500, "pm_card_ok")
	if first.Status != http.StatusAccepted {
		t.Fatalf("approval with the hold's answer lost: %d %s, want 202 pending", first.Status, first.Body)
	}
	id := first.JSON(t)["action_id"].(string)
	if n := r.Count("SELECT count(*) FROM payment_intents"); n != 0 {
		t.Fatal("an intent exists before its hold is confirmed")
	}
	r.untilConfirmed(t, id, 20*time.Second)
	pi := onlyPaymentIntent(t, r.sim)
	if pi.Status != "requires_capture" || pi.Metadata[stripeprovider.MetaAction] != id {
		t.Fatalf("PaymentIntent %+v, want one hold by %s", pi, id)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND hold_ref = $2", uuid.MustParse(id), pi.ID); n != 1 {
		t.Fatal("the intent does not record the replayed hold")
	}
}

// A hold that nears its capture_before uncaptured is flagged for an
// operator once: the approval joins the operator queue with a
// hold_expiring event naming the PaymentIntent and its deadline.
func TestStripeHoldNearCaptureBeforeIsFlaggedForAnOperator(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{StripeCaptureWindow: 2 * time.Hour})
	resp := r.approve(t, r.key, r.tenant, "hold-expiring", 1200, "pm_card_ok")
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", resp.Status, resp.Body)
	}
	approval := resp.JSON(t)["action_id"].(string)
	pi := onlyPaymentIntent(t, r.sim)
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator", approval); n != 0 {
		t.Fatal("flagged before any reconciler pass")
	}
	st, err := r.Main.Reconciler().RunOnce(t.Context())
	if err != nil || st.HoldsFlagged != 1 {
		t.Fatalf("pass: %+v %v, want one hold flagged", st, err)
	}
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator AND state = 'completed' AND outcome = 'confirmed'", approval); n != 1 {
		t.Fatal("the approval of a hold near its deadline is not in the operator queue")
	}
	if n := r.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'hold_expiring'
		AND detail->>'provider_ref' = $2`, approval, pi.ID); n != 1 {
		t.Fatalf("%d hold_expiring events naming %s, want 1", n, pi.ID)
	}
	// The operator's view lists it.
	queue := r.Request(http.MethodGet, "/v1/ops/actions?needs_operator=true", operatorToken, nil)
	if queue.Status != http.StatusOK || !strings.Contains(string(queue.Body), approval) {
		t.Fatalf("operator queue: %d %s, want the approval %s", queue.Status, queue.Body, approval)
	}
	// Once.
	r.pass(t)
	if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'hold_expiring'", approval); n != 1 {
		t.Fatalf("%d hold_expiring events after a second pass, want 1", n)
	}
}

// Each tenant's Stripe account (Stripe Connect) receives its own holds and
// captures, sent as Stripe-Account: two tenants, two accounts, each
// PaymentIntent on its tenant's account.
func TestStripeTenantsHoldAndCaptureOnTheirOwnAccounts(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	other, otherKey := r.Tenant("stripe-other")
	for tenant, acct := range map[uuid.UUID]string{r.tenant: "acct_tenantOne", other.ID: "acct_tenantTwo"} {
		if err := r.Store.SetTenantStripeAccount(t.Context(), tenant, acct); err != nil {
			t.Fatal(err)
		}
	}
	byAccount := map[string]string{}
	for _, c := range []struct {
		key    string
		tenant uuid.UUID
		acct   string
	}{{r.key, r.tenant, "acct_tenantOne"}, {otherKey, other.ID, "acct_tenantTwo"}} {
		resp := r.approve(t, c.key, c.tenant, "acct-approve", 700, "pm_card_ok")
		if resp.Status != http.StatusCreated {
			t.Fatalf("approve on %s: %d %s", c.acct, resp.Status, resp.Body)
		}
		intent := resp.JSON(t)["result"].(map[string]any)["id"].(string)
		if got := r.Post("/v1/payments", c.key, "acct-charge", map[string]any{"payment_intent_id": intent}); got.Status != http.StatusCreated {
			t.Fatalf("charge on %s: %d %s", c.acct, got.Status, got.Body)
		}
		byAccount[c.acct] = intent
	}
	l := r.sim.StripeLedger()
	if len(l) != 2 {
		t.Fatalf("Stripe holds %d PaymentIntents, want 2: %+v", len(l), l)
	}
	for _, pi := range l {
		if intent, ok := byAccount[pi.Account]; !ok || pi.Metadata[stripeprovider.MetaIntent] != intent || pi.Captures != 1 {
			t.Errorf("PaymentIntent %s on account %q for intent %s captured %d times, want its tenant's account and one capture",
				pi.ID, pi.Account, pi.Metadata[stripeprovider.MetaIntent], pi.Captures)
		}
	}
}

// An intent approved without a hold (before holds were made at approval)
// is still charged as before: hold and capture at once.
func TestStripeIntentWithoutHoldIsHeldAndCapturedByTheCharge(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	intent := uuid.New()
	if _, err := r.Store.Pool().Exec(t.Context(), `INSERT INTO payment_intents (id, tenant_id, customer_id, amount, currency, payment_method, action_id)
		VALUES ($1, $2, $3, 800, 'EUR', 'pm_card_ok', $4)`, intent, r.tenant, r.Customer(r.tenant), uuid.New()); err != nil {
		t.Fatal(err)
	}
	if got := r.Post("/v1/payments", r.key, "legacy-charge", map[string]any{"payment_intent_id": intent.String()}); got.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", got.Status, got.Body)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 1 || pi.AmountReceived != 800 || pi.Metadata[stripeprovider.MetaStep] != provider.Payments {
		t.Fatalf("PaymentIntent %+v, want one made and captured by the charge", pi)
	}
}

// A card the customer saved at Stripe is held off-session (the caller is
// not there to authenticate) on their Stripe customer, and captured by the
// charge.
func TestStripeSavedCardIsHeldOffSessionAndCaptured(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	resp := r.Post("/v1/payment-intents", r.key, "saved-card", map[string]any{
		"customer_id": r.Customer(r.tenant), "amount": 4200, "currency": "EUR",
		"payment_method": "pm_1SavedVisa", "stripe_customer": "cus_Saved42",
	})
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve with a saved card: %d %s", resp.Status, resp.Body)
	}
	intent := resp.JSON(t)["result"].(map[string]any)["id"].(string)
	held := onlyPaymentIntent(t, r.sim)
	if held.PaymentMethod != "pm_1SavedVisa" || held.Customer != "cus_Saved42" || !held.OffSession || held.Status != "requires_capture" {
		t.Fatalf("PaymentIntent %+v, want an off-session hold on the saved card of cus_Saved42", held)
	}
	if got := r.Post("/v1/payments", r.key, "saved-card-charge", map[string]any{"payment_intent_id": intent}); got.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", got.Status, got.Body)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 1 || pi.AmountReceived != 4200 {
		t.Fatalf("PaymentIntent %+v, want captured once", pi)
	}
}

// A saved card whose bank wants the cardholder to authenticate cannot be
// held off-session: the approval is rejected AUTHENTICATION_REQUIRED, with
// what the agent may say, nothing is held and no intent exists.
func TestStripeSavedCardNeedingAuthenticationIsRejected(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	resp := r.Post("/v1/payment-intents", r.key, "saved-card-3ds", map[string]any{
		"customer_id": r.Customer(r.tenant), "amount": 4200, "currency": "EUR",
		"payment_method": providersim.StripeAuthenticationMethod, "stripe_customer": "cus_Saved42",
	})
	if got := reason(t, resp); got != "AUTHENTICATION_REQUIRED" {
		t.Fatalf("approval needing authentication: %s (%s)", got, resp.Body)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Status == "requires_capture" || pi.Captures != 0 {
		t.Fatalf("PaymentIntent %+v, want nothing held", pi)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents"); n != 0 {
		t.Fatalf("%d intents recorded for a card that needs authentication", n)
	}
}

// The capture of a hold whose answer is lost leaves the charge pending;
// Stripe's signed webhook about the captured PaymentIntent names the charge
// (the capture's metadata), so it is a notice on the charge's step, which
// the reconciler then confirms from the PaymentIntent: one capture.
func TestStripeWebhookAboutACapturedHoldIsANoticeForItsCharge(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	resp := r.approve(t, r.key, r.tenant, "notice-approve", 1800, "pm_card_ok")
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", resp.Status, resp.Body)
	}
	approval := resp.JSON(t)["action_id"].(string)
	intent := resp.JSON(t)["result"].(map[string]any)["id"].(string)
	lose(t, r.sim, providersim.OnCapture)
	first := r.Post("/v1/payments", r.key, "notice-charge", map[string]any{"payment_intent_id": intent})
	if first.Status != http.StatusAccepted {
		t.Fatalf("charge with the capture's answer lost: %d %s, want 202", first.Status, first.Body)
	}
	charge := first.JSON(t)["action_id"].(string)
	waitFor(t, "Stripe's webhook about the capture to reach the charge", 10*time.Second, func() bool {
		return r.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'provider_notice'
			AND detail->>'type' = 'payment_intent.succeeded'`, charge) == 1
	})
	if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'provider_notice' AND detail->>'type' = 'payment_intent.succeeded'", approval); n != 0 {
		t.Fatalf("the capture's notice went to the approval (%d)", n)
	}
	r.untilConfirmed(t, charge, 20*time.Second)
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 1 || pi.Metadata[stripeprovider.MetaChargeAction] != charge {
		t.Fatalf("PaymentIntent %+v, want captured once by %s", pi, charge)
	}
}

// captureInDashboard captures a PaymentIntent as staff would in Stripe's
// Dashboard: the whole amount, naming no charge.
func captureInDashboard(t *testing.T, sim *simtest.Sim, id string) {
	t.Helper()
	resp, err := http.PostForm(sim.URL+"/v1/payment_intents/"+id+"/capture", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("capture in the Dashboard: %d", resp.StatusCode)
	}
}

// A hold captured in Stripe's Dashboard is no charge's: a charge of the
// intent finds it captured by nobody oncecall knows, for another amount,
// and is neither confirmed nor recorded as paid. The caller hears pending
// and an operator decides.
func TestStripeHoldCapturedInTheDashboardIsNotConfirmedAsTheCharge(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	resp := r.approve(t, r.key, r.tenant, "dash-approve", 5000, "pm_card_ok")
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", resp.Status, resp.Body)
	}
	intent := resp.JSON(t)["result"].(map[string]any)["id"].(string)
	captureInDashboard(t, r.sim, onlyPaymentIntent(t, r.sim).ID)
	charged := r.Post("/v1/payments", r.key, "dash-charge", map[string]any{"payment_intent_id": intent, "amount": 3000})
	if charged.Status != http.StatusAccepted || charged.JSON(t)["outcome"] != "pending" {
		t.Fatalf("charge of a hold captured in the Dashboard: %d %s, want 202 pending", charged.Status, charged.Body)
	}
	id := charged.JSON(t)["action_id"].(string)
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator", id); n != 1 {
		t.Fatal("the charge is not in the operator queue")
	}
	if n := r.Count("SELECT count(*) FROM payments WHERE status = 'succeeded'"); n != 0 {
		t.Fatalf("%d payments recorded as succeeded, want none", n)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 1 || pi.AmountReceived != 5000 {
		t.Fatalf("PaymentIntent %+v, want the Dashboard's one capture", pi)
	}
}

// A charge whose capture answer was lost, resolved rejected by an operator
// who missed the capture, frees the intent; the next charge's capture is
// refused, and the PaymentIntent, captured, names the first charge: the
// second is rejected INTENT_ALREADY_CAPTURED, not confirmed by the first
// one's capture. One capture, no second payment.
func TestStripeSecondChargeIsNotConfirmedByTheFirstOnesCapture(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	resp := r.approve(t, r.key, r.tenant, "two-approve", 5000, "pm_card_ok")
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", resp.Status, resp.Body)
	}
	intent := resp.JSON(t)["result"].(map[string]any)["id"].(string)
	lose(t, r.sim, providersim.OnCapture)
	first := r.Post("/v1/payments", r.key, "two-first", map[string]any{"payment_intent_id": intent, "amount": 3000})
	if first.Status != http.StatusAccepted {
		t.Fatalf("first charge with its capture answer lost: %d %s, want 202", first.Status, first.Body)
	}
	firstID := first.JSON(t)["action_id"].(string)
	waitFor(t, "Stripe to capture the first charge", 10*time.Second, func() bool { return onlyPaymentIntent(t, r.sim).Captures == 1 })
	resolved := r.Post("/v1/ops/actions/"+firstID+"/resolve", operatorToken, "", map[string]any{
		"outcome": "rejected", "note": "no capture seen", "by": "ana",
	})
	if resolved.Status != http.StatusOK {
		t.Fatalf("resolve: %d %s", resolved.Status, resolved.Body)
	}
	second := r.Post("/v1/payments", r.key, "two-second", map[string]any{"payment_intent_id": intent, "amount": 3000})
	if got := reason(t, second); got != stripeprovider.AlreadyCaptured {
		t.Fatalf("second charge rejected %s, want %s", got, stripeprovider.AlreadyCaptured)
	}
	if n := r.Count("SELECT count(*) FROM payments WHERE status = 'succeeded'"); n != 0 {
		t.Fatalf("%d payments recorded as succeeded, want none for the second charge", n)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 1 || pi.Metadata[stripeprovider.MetaChargeAction] != firstID {
		t.Fatalf("PaymentIntent %+v, want captured once, by the first charge", pi)
	}
}
