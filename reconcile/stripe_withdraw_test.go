package reconcile_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/payment"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

func (r remoteEnv) withdraw(t *testing.T, key, intent string) apptest.Response {
	t.Helper()
	return r.Post("/v1/payment-intents/"+intent+"/cancel", r.key, key, nil)
}

// Withdrawing an approved intent cancels its Stripe hold once, under the
// step's key: the intent is withdrawn, a later charge is rejected
// INTENT_WITHDRAWN and captures nothing, a second withdrawal is rejected,
// and the same request again replays.
func TestStripeWithdrawnIntentCancelsItsHoldOnce(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	approved := r.approve(t, r.key, r.tenant, "withdraw-approve", 3000, "pm_card_ok")
	intent := approved.JSON(t)["result"].(map[string]any)["id"].(string)
	resp := r.withdraw(t, "withdraw-1", intent)
	if resp.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s, want 200", resp.Status, resp.Body)
	}
	pi := onlyPaymentIntent(t, r.sim)
	if pi.Status != "canceled" || pi.Captures != 0 {
		t.Fatalf("hold after the withdrawal %+v, want canceled", pi)
	}
	if got := resp.JSON(t)["result"].(map[string]any); got["status"] != "withdrawn" || got["provider_ref"] != pi.ID {
		t.Fatalf("withdrawal result %v", got)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'withdrawn' AND charging_action_id IS NULL", intent); n != 1 {
		t.Fatal("the intent is not withdrawn")
	}
	if got := reason(t, r.Post("/v1/payments", r.key, "withdrawn-charge", map[string]any{"payment_intent_id": intent})); got != payment.Withdrawn {
		t.Fatalf("charge of a withdrawn intent: %s", got)
	}
	if got := reason(t, r.withdraw(t, "withdraw-2", intent)); got != payment.Withdrawn {
		t.Fatalf("second withdrawal: %s", got)
	}
	if again := r.withdraw(t, "withdraw-1", intent); again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.Status, again.Body)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Status != "canceled" || pi.Captures != 0 {
		t.Fatalf("hold %+v, want canceled and never captured", pi)
	}
}

// A withdrawal whose cancel answer is lost is pending; meanwhile no charge
// of the intent can start; the reconciler re-sends under the same key and
// withdraws it.
func TestStripeWithdrawalWithLostAnswerIsPendingThenWithdrawn(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	intent := r.approve(t, r.key, r.tenant, "lost-approve", 3000, "pm_card_ok").JSON(t)["result"].(map[string]any)["id"].(string)
	lose(t, r.sim, providersim.OnWrite)
	resp := r.withdraw(t, "lost-withdraw", intent)
	if resp.Status != http.StatusAccepted {
		t.Fatalf("withdraw with its answer lost: %d %s, want 202", resp.Status, resp.Body)
	}
	if got := reason(t, r.Post("/v1/payments", r.key, "during", map[string]any{"payment_intent_id": intent})); got != payment.ChargeInProgress {
		t.Fatalf("charge during the withdrawal: %s", got)
	}
	r.untilConfirmed(t, resp.JSON(t)["action_id"].(string), 20*time.Second)
	if pi := onlyPaymentIntent(t, r.sim); pi.Status != "canceled" || pi.Captures != 0 {
		t.Fatalf("hold %+v, want canceled", pi)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'withdrawn'", intent); n != 1 {
		t.Fatal("the intent is not withdrawn")
	}
}

// An intent without a hold (paid by link) is withdrawn at once, with no
// step; without Stripe a local intent is withdrawn the same way.
func TestStripeWithdrawalOfAnIntentWithoutAHoldIsLocal(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{})
	intent := r.approve(t, r.key, r.tenant, "link-approve", 3000, "payment_link").JSON(t)["result"].(map[string]any)["id"].(string)
	resp := r.withdraw(t, "link-withdraw", intent)
	if resp.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", resp.Status, resp.Body)
	}
	if n := r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1", uuid.MustParse(resp.JSON(t)["action_id"].(string))); n != 0 {
		t.Fatalf("%d steps for a withdrawal without a hold", n)
	}
	if n := len(r.sim.StripeLedger()); n != 0 {
		t.Fatalf("%d PaymentIntents at Stripe", n)
	}
	if got := reason(t, r.Post("/v1/payment-links", r.key, "link-after", map[string]any{"payment_intent_id": intent})); got != payment.Withdrawn {
		t.Fatalf("link of a withdrawn intent: %s", got)
	}

	local := apptest.Start(t)
	tenant, key := local.Tenant("local")
	approved := local.Post("/v1/payment-intents", key, "a", map[string]any{"customer_id": local.Customer(tenant.ID), "amount": 500, "currency": "EUR"})
	id := approved.JSON(t)["result"].(map[string]any)["id"].(string)
	if w := local.Post("/v1/payment-intents/"+id+"/cancel", key, "w", map[string]any{}); w.Status != http.StatusOK {
		t.Fatalf("local withdrawal: %d %s", w.Status, w.Body)
	}
	if got := reason(t, local.Post("/v1/payments", key, "c", map[string]any{"payment_intent_id": id})); got != payment.Withdrawn {
		t.Fatalf("local charge of a withdrawn intent: %s", got)
	}
	if n := local.Count("SELECT count(*) FROM payments"); n != 0 {
		t.Fatalf("%d payments of a withdrawn intent", n)
	}
}

// A hold past its capture deadline, uncaptured, is marked expired by the
// reconciler; a charge of it is then rejected INTENT_HOLD_EXPIRED and sends
// nothing.
func TestStripeHoldPastItsDeadlineIsExpired(t *testing.T) {
	t.Parallel()
	r := setupStripeHolds(t, providersim.Config{StripeCaptureWindow: time.Second})
	intent := r.approve(t, r.key, r.tenant, "expire-approve", 3000, "pm_card_ok").JSON(t)["result"].(map[string]any)["id"].(string)
	waitFor(t, "the hold's expiry", 10*time.Second, func() bool {
		r.pass(t)
		return r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'expired'", intent) == 1
	})
	if got := reason(t, r.Post("/v1/payments", r.key, "late", map[string]any{"payment_intent_id": intent})); got != payment.HoldExpired {
		t.Fatalf("charge of an expired hold: %s", got)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 0 {
		t.Fatalf("an expired hold was captured: %+v", pi)
	}
}
