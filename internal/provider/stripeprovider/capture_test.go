package stripeprovider_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// holdWrite is an approval's hold of amount on account.
func holdWrite(n int, amount int64, account string) provider.Write {
	return provider.Write{
		Capability: provider.Holds, Key: fmt.Sprintf("oc-hold-%d", n), ExternalRef: fmt.Sprintf("approval-%d/%s", n, provider.Holds),
		Operation: stripeprovider.HoldOperation,
		Payload: json.RawMessage(fmt.Sprintf(`{"payment_intent_id":"intent-%d","amount":%d,"currency":"EUR","payment_method":"pm_card_ok","account":%q}`,
			n, amount, account)),
	}
}

// captureWrite is charge name's capture of amount of the hold.
func captureWrite(name, hold string, amount int64, account string) provider.Write {
	return provider.Write{
		Capability: provider.Payments, Key: "oc-charge-" + name, ExternalRef: "charge-" + name + "/" + provider.Payments,
		Operation: stripeprovider.Operation,
		Payload: json.RawMessage(fmt.Sprintf(`{"payment_intent_id":"intent","amount":%d,"currency":"EUR","hold":%q,"account":%q}`,
			amount, hold, account)),
	}
}

// captureOutside captures a PaymentIntent as something other than the
// adapter would (the Dashboard, say): amount, with the given metadata.
func captureOutside(t *testing.T, sim *simtest.Sim, id string, amount int64, metadata map[string]string) {
	t.Helper()
	form := url.Values{"amount_to_capture": {fmt.Sprint(amount)}}
	for k, v := range metadata {
		form.Set("metadata["+k+"]", v)
	}
	resp, err := http.PostForm(sim.URL+"/v1/payment_intents/"+id+"/capture", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("capture of %s outside oncecall: %d", id, resp.StatusCode)
	}
}

// A hold another charge captured is that charge's: a second charge's
// refused capture finds the PaymentIntent succeeded, names the other
// charge in its metadata, and is not confirmed by it. Its capture was not
// made (a PaymentIntent is captured once): it is rejected
// INTENT_ALREADY_CAPTURED, and its lookup says the same.
func TestStripeHoldCapturedByAnotherChargeIsNotThisCharge(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	p := newStripe(t, sim)
	hold, err := p.Write(t.Context(), holdWrite(1, 5000, ""))
	if err != nil {
		t.Fatal(err)
	}
	first := captureWrite("a", hold.ID, 3000, "")
	if rec, err := p.Write(t.Context(), first); err != nil || rec.ID != hold.ID {
		t.Fatalf("first charge = %+v, %v; want the hold %s captured", rec, err, hold.ID)
	}
	second := captureWrite("b", hold.ID, 3000, "")
	rec, err := p.Write(t.Context(), second)
	var rej *provider.Rejected
	if !errors.As(err, &rej) || rej.Code != stripeprovider.AlreadyCaptured {
		t.Fatalf("second charge = %+v, %v; want rejected %s: another charge captured the hold", rec, err, stripeprovider.AlreadyCaptured)
	}
	got, found, err := p.LookupWrite(t.Context(), second)
	if err != nil || !found || got.Status != "rejected" || got.Code != stripeprovider.AlreadyCaptured {
		t.Fatalf("lookup of the second charge = %+v, %v, %v; want rejected %s", got, found, err, stripeprovider.AlreadyCaptured)
	}
	if got, found, err := p.LookupWrite(t.Context(), first); err != nil || !found || got.Status != "committed" || got.ID != hold.ID {
		t.Fatalf("lookup of the first charge = %+v, %v, %v; want its capture", got, found, err)
	}
	if pi := onlyIntent(t, sim); pi.Captures != 1 || pi.AmountReceived != 3000 || pi.Metadata[stripeprovider.MetaChargeAction] != "charge-a" {
		t.Fatalf("PaymentIntent %+v, want captured once, by the first charge", pi)
	}
}

// A PaymentIntent captured by no charge of oncecall's (the Dashboard), or
// for another amount than the charge's, says nothing about whether this
// charge captured: an operator decides (provider.ErrConflict), for the
// charge's send and its lookup alike.
func TestStripeCaptureNamingNoChargeOrAnotherAmountIsAConflict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		amount   int64
		metadata map[string]string
	}{
		{"dashboard", 5000, nil},
		{"another_amount", 1000, map[string]string{stripeprovider.MetaChargeAction: "charge-c", stripeprovider.MetaChargeStep: provider.Payments}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, providersim.Config{})
			p := newStripe(t, sim)
			hold, err := p.Write(t.Context(), holdWrite(2, 5000, ""))
			if err != nil {
				t.Fatal(err)
			}
			captureOutside(t, sim, hold.ID, tc.amount, tc.metadata)
			w := captureWrite("c", hold.ID, 3000, "")
			if rec, err := p.Write(t.Context(), w); !errors.Is(err, provider.ErrConflict) {
				t.Fatalf("charge = %+v, %v; want a conflict for an operator", rec, err)
			}
			if rec, found, err := p.LookupWrite(t.Context(), w); !errors.Is(err, provider.ErrConflict) || found {
				t.Fatalf("lookup = %+v, %v, %v; want a conflict for an operator", rec, found, err)
			}
		})
	}
	// A charge that made its own hold: captured for another amount than
	// the charge's (in the Dashboard, between the hold and the capture).
	t.Run("own_hold", func(t *testing.T) {
		t.Parallel()
		sim := simtest.Start(t, providersim.Config{})
		p := newStripe(t, sim)
		if _, err := sim.Admin.AddFault(t.Context(), providersim.Rule{Capability: provider.Payments, Fault: providersim.FaultFailBeforeCommit, Count: 1, On: providersim.OnCapture}); err != nil {
			t.Fatal(err)
		}
		w := chargeWrite(7, 2500, "pm_card_ok")
		if _, err := p.Write(t.Context(), w); provider.Classify(err) != "ambiguous" {
			t.Fatalf("charge with its capture failed = %v, want ambiguous", err)
		}
		captureOutside(t, sim, onlyIntent(t, sim).ID, 1000, nil)
		if rec, err := p.Write(t.Context(), w); !errors.Is(err, provider.ErrConflict) {
			t.Fatalf("re-send = %+v, %v; want a conflict for an operator", rec, err)
		}
	})
}

// A write made on a tenant's connected account is looked up there: by the
// step's write (its account is in the payload), never by a key or a
// reference alone, which would ask the platform's account and find nothing.
func TestStripeLookupsAskTheStepsAccount(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	p := newStripe(t, sim)
	w := chargeWrite(8, 700, "")
	w.Payload = json.RawMessage(`{"payment_intent_id":"intent-8","amount":700,"currency":"EUR","account":"acct_tenant8"}`)
	rec, err := p.Write(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	if pi := onlyIntent(t, sim); pi.Account != "acct_tenant8" {
		t.Fatalf("PaymentIntent on %q, want the tenant's account", pi.Account)
	}
	if got, found, err := p.LookupWrite(t.Context(), w); err != nil || !found || got.ID != rec.ID {
		t.Fatalf("LookupWrite = %+v, %v, %v; want %s on the tenant's account", got, found, err, rec.ID)
	}
	if got, found, err := p.LookupByKey(t.Context(), provider.Payments, w.Key); err == nil && !found {
		t.Fatalf("LookupByKey = %+v, not found: the platform's account was asked for the tenant's write", got)
	}
	if recs, err := p.LookupByRef(t.Context(), provider.Payments, w.ExternalRef); err == nil && len(recs) == 0 {
		t.Fatal("LookupByRef = not found: the platform's account was asked for the tenant's write")
	}
	if _, err := p.Retrieve(t.Context(), "acct_tenant8", rec.ID); err != nil {
		t.Fatalf("Retrieve on the tenant's account: %v", err)
	}
	if _, err := p.Retrieve(t.Context(), "", rec.ID); err == nil || !strings.Contains(err.Error(), "No such payment_intent") {
		t.Fatalf("Retrieve on the platform's account = %v, want not there", err)
	}
}

// The adapter is named by its account, or by its key's mode: never the key.
func TestStripeIdentityNamesTheAccountNotTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, account, want string }{
		{"sk_live_51Habc", "", "platform/live"},
		{"rk_test_51Habc", "", "platform/test"},
		{"sk_test_51Habc", "acct_123", "acct_123"},
	} {
		p, err := stripeprovider.New(stripeprovider.Config{SecretKey: tc.key, Account: tc.account})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Identity(); got != (provider.Identity{Kind: "stripe", Account: tc.want}) || strings.Contains(got.Account, tc.key) {
			t.Errorf("identity with %s/%q = %+v, want stripe %q", tc.key, tc.account, got, tc.want)
		}
	}
}
