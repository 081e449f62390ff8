package stripeprovider_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

func newStripe(t *testing.T, sim *simtest.Sim) *stripeprovider.Provider {
	t.Helper()
	p, err := stripeprovider.New(stripeprovider.Config{SecretKey: "sk_test_sim", BaseURL: sim.URL})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func chargeWrite(n int, amount int64, method string) provider.Write {
	return provider.Write{
		Capability: provider.Payments, Key: fmt.Sprintf("oc-key-%d", n), ExternalRef: fmt.Sprintf("action-%d/payments", n),
		Operation: stripeprovider.Operation,
		Payload:   json.RawMessage(fmt.Sprintf(`{"payment_intent_id":"intent-%d","amount":%d,"currency":"EUR","payment_method":%q}`, n, amount, method)),
	}
}

// onlyIntent is the simulator's single PaymentIntent.
func onlyIntent(t *testing.T, sim *simtest.Sim) providersim.StripePaymentIntent {
	t.Helper()
	l := sim.StripeLedger()
	if len(l) != 1 {
		t.Fatalf("Stripe holds %d PaymentIntents, want 1: %+v", len(l), l)
	}
	return l[0]
}

// A charge holds with manual capture and captures it; sending the same
// step again replays both under their keys: one capture.
func TestStripeChargeHoldsThenCapturesOnce(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	p := newStripe(t, sim)
	w := chargeWrite(1, 4500, "pm_card_ok")
	rec, err := p.Write(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Write(t.Context(), w)
	if err != nil || again.ID != rec.ID {
		t.Fatalf("re-send = %+v, %v; want the same PaymentIntent %s", again, err, rec.ID)
	}
	pi := onlyIntent(t, sim)
	if pi.ID != rec.ID || pi.CaptureMethod != "manual" || pi.Status != "succeeded" || pi.Captures != 1 || pi.AmountReceived != 4500 {
		t.Fatalf("PaymentIntent %+v, want %s manual, succeeded, captured once for 4500", pi, rec.ID)
	}
	if pi.Metadata[stripeprovider.MetaKey] != w.Key || pi.Metadata[stripeprovider.MetaAction] != "action-1" ||
		pi.Metadata[stripeprovider.MetaStep] != "payments" || pi.Metadata[stripeprovider.MetaIntent] != "intent-1" {
		t.Fatalf("metadata %v does not name the key, action, step and intent", pi.Metadata)
	}
}

// A declined card is a rejection and its hold is cancelled.
func TestStripeDeclineIsRejectedAndCancelsTheHold(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	p := newStripe(t, sim)
	_, err := p.Write(t.Context(), chargeWrite(2, 900, "pm_card_declined"))
	var rej *provider.Rejected
	if !errors.As(err, &rej) || rej.Code != stripeprovider.Declined {
		t.Fatalf("Write = %v, want the rejection %s", err, stripeprovider.Declined)
	}
	if pi := onlyIntent(t, sim); pi.Status != "canceled" || pi.Captures != 0 {
		t.Fatalf("PaymentIntent %+v, want canceled and never captured", pi)
	}
}

// Answers lost after Stripe committed (the hold's, then the capture's)
// leave the write ambiguous, never failed; the re-send under the same keys
// finishes it with exactly one capture.
func TestStripeLostAnswersAreAmbiguousAndTheResendCapturesOnce(t *testing.T) {
	t.Parallel()
	for _, on := range []string{providersim.OnWrite, providersim.OnCapture} {
		t.Run(on, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, providersim.Config{})
			if _, err := sim.Admin.AddFault(t.Context(), providersim.Rule{Capability: provider.Payments, Fault: providersim.FaultDropResponse, Count: 1, On: on}); err != nil {
				t.Fatal(err)
			}
			p := newStripe(t, sim)
			w := chargeWrite(3, 2500, "pm_card_ok")
			if _, err := p.Write(t.Context(), w); provider.Classify(err) != "ambiguous" {
				t.Fatalf("Write with the %s answer lost = %v, want ambiguous", on, err)
			}
			rec, err := p.Write(t.Context(), w)
			if err != nil {
				t.Fatalf("re-send: %v", err)
			}
			if pi := onlyIntent(t, sim); pi.ID != rec.ID || pi.Captures != 1 || pi.Status != "succeeded" {
				t.Fatalf("PaymentIntent %+v, want %s captured once", pi, rec.ID)
			}
		})
	}
}

// A 500 after Stripe committed the hold is replayed for the key forever:
// while search does not see the hold yet the write stays ambiguous; once it
// does, the re-send finds the hold by its key in metadata and captures it
// once.
func TestStripe500AfterCommitIsFoundBySearchAndCapturedOnce(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{LookupLag: 300 * time.Millisecond})
	sim.Fault(provider.Payments, providersim.FaultFailAfterCommit, 1)
	p := newStripe(t, sim)
	w := chargeWrite(4, 1200, "pm_card_ok")
	if _, err := p.Write(t.Context(), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("Write answered 500 after commit = %v, want ambiguous", err)
	}
	if _, err := p.Write(t.Context(), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("re-send before search sees the hold = %v, want ambiguous", err)
	}
	if pi := onlyIntent(t, sim); pi.Status != "requires_capture" {
		t.Fatalf("after the 500 the hold is %+v, want requires_capture", pi)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := p.LookupWrite(t.Context(), w)
		if err != nil && strings.Contains(err.Error(), "not captured") {
			break // search sees the uncaptured hold
		}
		if time.Now().After(deadline) {
			t.Fatalf("search never saw the hold: %v", err)
		}
		<-time.After(20 * time.Millisecond) // poll interval of a condition wait
	}
	rec, err := p.Write(t.Context(), w)
	if err != nil {
		t.Fatalf("re-send: %v", err)
	}
	if pi := onlyIntent(t, sim); pi.ID != rec.ID || pi.Captures != 1 {
		t.Fatalf("PaymentIntent %+v, want %s captured once", pi, rec.ID)
	}
	// Another write under the same key is Stripe's idempotency_error: the
	// key holds another write, an operator's case.
	other := w
	other.Payload = json.RawMessage(`{"payment_intent_id":"intent-4","amount":1300,"currency":"EUR"}`)
	if _, err := p.Write(t.Context(), other); !errors.Is(err, provider.ErrKeyConflict) {
		t.Fatalf("another write under the key = %v, want a key conflict", err)
	}
}

// A lookup finds a captured charge by its key, on its account; a key never
// sent is not found.
func TestStripeLookupFindsTheChargeByItsKey(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	p := newStripe(t, sim)
	w := chargeWrite(5, 700, "")
	rec, err := p.Write(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := p.LookupWrite(t.Context(), w)
	if err != nil || !found || got.ID != rec.ID || got.Status == "rejected" {
		t.Fatalf("LookupWrite = %+v, %v, %v; want %s", got, found, err, rec.ID)
	}
	never := w
	never.Key = "oc-never-sent"
	if _, found, err := p.LookupWrite(t.Context(), never); found || err != nil {
		t.Fatalf("LookupWrite of an unknown key = %v, %v; want not found", found, err)
	}
}
