package api_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// declinedCharges is oncecall charging through a simulated Stripe, and a
// payment intent approved for a card Stripe declines.
type declinedCharges struct {
	dashaEnv
	sim    *simtest.Sim
	intent string
}

func setupDeclinedCharges(t *testing.T, cfg ...func(*app.Config)) declinedCharges {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{})
	p, err := stripeprovider.New(stripeprovider.Config{SecretKey: "sk_test_sim", BaseURL: sim.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := setupDasha(t, append([]func(*app.Config){func(c *app.Config) {
		c.Providers = provider.Set{provider.Payments: p}
		c.ReconcileDisabled = true // the request's own dispatch records the decline
	}}, cfg...)...)
	approved := d.Post("/v1/payment-intents", d.key, "approve-declining", map[string]any{
		"customer_id": d.customer, "amount": 4500, "currency": "EUR", "payment_method": "pm_card_declined",
	})
	if approved.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", approved.Status, approved.Body)
	}
	return declinedCharges{dashaEnv: d, sim: sim, intent: approved.JSON(t)["result"].(map[string]any)["id"].(string)}
}

// charges is how many actions charged the intent, and requests how many
// PaymentIntents Stripe was asked for, by action.
func (c declinedCharges) charges(t *testing.T) (actions int, requests map[string]int) {
	t.Helper()
	requests = map[string]int{}
	for _, pi := range c.sim.StripeLedger() {
		requests[pi.Metadata[stripeprovider.MetaAction]]++
	}
	return c.Count("SELECT count(*) FROM actions WHERE operation = 'payment.charge' AND request->>'payment_intent_id' = $1", c.intent), requests
}

// untilAnswered sends until the answer is not a 503, as Dasha and a REST
// client retry one: nothing was stored for a 503.
func untilAnswered(t *testing.T, send func() (apptest.Response, error)) (apptest.Response, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := send()
		if err != nil || r.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return r, err
		}
		time.Sleep(50 * time.Millisecond) // a client's retry delay, not synchronisation
	}
}

// Twenty identical charge_payment calls arrive at once (Dasha's retries,
// the model invoking the tool again) and Stripe declines the card. The
// first attempt's decline is the answer of every duplicate, those that
// waited for it and those that came just after it: one action, one
// PaymentIntent at Stripe.
func TestConcurrentDuplicatesOfADeclinedRemoteChargeSendOnce(t *testing.T) {
	t.Parallel()
	c := setupDeclinedCharges(t)
	const n = 20
	args := map[string]any{"payment_intent_id": c.intent}
	answers := make([]apptest.Response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			answers[i], errs[i] = untilAnswered(t, func() (apptest.Response, error) {
				return c.RequestCtx(t.Context(), http.MethodPost, "/v1/dasha/tools/charge_payment", c.key, payload("charge_payment", "call_declined", args))
			})
		})
	}
	wg.Wait()
	ids := map[string]int{}
	for i, r := range answers {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		a := decodeAnswer(t, r)
		if a.Outcome != "rejected" || a.Reason != "payment_declined" {
			t.Fatalf("call %d: %s", i, r.Body)
		}
		ids[a.ActionID]++
	}
	actions, requests := c.charges(t)
	if actions != 1 || len(ids) != 1 || len(requests) != 1 {
		t.Fatalf("%d identical calls made %d actions, answered with %d action ids (%v), sent %d PaymentIntents (%v); want 1, 1, 1",
			n, actions, len(ids), ids, len(c.sim.StripeLedger()), requests)
	}
}

// The same intent charged at once by a REST client retrying under one key
// and by Dasha tool calls, either without a key of their own (a key derived
// from the intent) or under the REST client's key. Each key is one action,
// and each action asks Stripe at most once.
func TestConcurrentRESTAndDashaChargesOfADecliningCardSendOncePerKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// dashaKey is the Idempotency-Key the tool calls send ("": none).
		dashaKey string
		actions  int
	}{
		{"derived key", "", 2},
		{"the REST key", "charge-rest", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := setupDeclinedCharges(t)
			body := map[string]any{"payment_intent_id": c.intent}
			var headers []string
			if tc.dashaKey != "" {
				headers = []string{"Idempotency-Key", tc.dashaKey}
			}
			const restN, dashaN = 20, 10
			answers := make([]apptest.Response, restN+dashaN)
			errs := make([]error, restN+dashaN)
			var wg sync.WaitGroup
			for i := range restN + dashaN {
				wg.Go(func() {
					answers[i], errs[i] = untilAnswered(t, func() (apptest.Response, error) {
						if i < restN {
							return c.RequestCtx(t.Context(), http.MethodPost, "/v1/payments", c.key, body,
								"Idempotency-Key", "charge-rest", "Prefer", "wait=10")
						}
						return c.RequestCtx(t.Context(), http.MethodPost, "/v1/dasha/tools/charge_payment", c.key,
							payload("charge_payment", "call_mixed", body), headers...)
					})
				})
			}
			wg.Wait()
			byKey := map[string]map[string]bool{} // answered action ids, REST and Dasha
			for i, r := range answers {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				side, id := "rest", ""
				if i < restN {
					if r.Status != http.StatusUnprocessableEntity {
						t.Fatalf("REST request %d: %d %s", i, r.Status, r.Body)
					}
					id, _ = r.JSON(t)["action_id"].(string)
				} else {
					side = "dasha"
					a := decodeAnswer(t, r)
					if a.Outcome != "rejected" || (a.Reason != "payment_declined" && a.Reason != "intent_charge_in_progress") {
						t.Fatalf("tool call %d: %s", i, r.Body)
					}
					id = a.ActionID
				}
				if byKey[side] == nil {
					byKey[side] = map[string]bool{}
				}
				byKey[side][id] = true
			}
			actions, requests := c.charges(t)
			if actions != tc.actions || len(byKey["rest"]) != 1 || len(byKey["dasha"]) != 1 {
				t.Fatalf("made %d actions, answered REST with %d and Dasha with %d action ids; want %d actions, one id each",
					actions, len(byKey["rest"]), len(byKey["dasha"]), tc.actions)
			}
			for action, sent := range requests {
				if sent != 1 {
					t.Errorf("action %s sent %d PaymentIntents, want 1", action, sent)
				}
			}
			if len(requests) > tc.actions {
				t.Fatalf("%d actions sent PaymentIntents (%v), want at most %d", len(requests), requests, tc.actions)
			}
			if tc.actions == 1 && !strings.EqualFold(idOf(byKey["rest"]), idOf(byKey["dasha"])) {
				t.Fatalf("REST and Dasha under one key answered with different actions: %v %v", byKey["rest"], byKey["dasha"])
			}
		})
	}
}

// idOf is the one key of a set.
func idOf(set map[string]bool) string {
	for k := range set {
		return k
	}
	return ""
}

// A model that hears a decline and calls charge_payment again restating the
// amount (the intent's own, so the same charge in other words) repeats the
// request it was just answered: within the hold it hears that decline, and
// Stripe is asked once.
func TestARestatedChargeHearsTheDeclineItRepeats(t *testing.T) {
	t.Parallel()
	c := setupDeclinedCharges(t)
	first := decodeAnswer(t, c.call("charge_payment", "call_restated", map[string]any{"payment_intent_id": c.intent}))
	if first.Outcome != "rejected" || first.Reason != "payment_declined" {
		t.Fatalf("first charge: %+v", first)
	}
	again := decodeAnswer(t, c.call("charge_payment", "call_restated", map[string]any{"payment_intent_id": c.intent, "amount": 4500}))
	if again.Outcome != "rejected" || again.Reason != "payment_declined" || again.ActionID != first.ActionID {
		t.Fatalf("the charge restating its amount: %+v; want the decline of %s", again, first.ActionID)
	}
	if actions, requests := c.charges(t); actions != 1 || len(requests) != 1 {
		t.Fatalf("the charge and its restatement made %d actions and sent %d PaymentIntents (%v); want 1 and 1", actions, len(c.sim.StripeLedger()), requests)
	}
}
