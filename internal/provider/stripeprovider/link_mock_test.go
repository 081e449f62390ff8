package stripeprovider

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/stripemock"
)

// A payment link's requests, as stripe-mock (Stripe's API description)
// accepts them: the Checkout Session is created in payment mode for the
// intent's amount, with the step's key as Idempotency-Key, the tenant's
// account, the expiry fixed at the claim, and oncecall's ids in its
// metadata and its PaymentIntent's; it is read back with its PaymentIntent
// expanded, and listed by creation time to be found by its key.
func TestStripeMockAcceptsThePaymentLinkRequests(t *testing.T) {
	t.Parallel()
	base, rc := proxy(t, stripemock.Start(t))
	p, err := New(Config{SecretKey: "sk_test_123", BaseURL: base, Account: "acct_processDefault"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := "oc-0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
	expires := time.Now().Add(time.Hour).Unix()
	create := provider.Write{Capability: provider.Links, Key: key, ExternalRef: "01a2-link/payment_links.session", Operation: LinkCreateOperation,
		Payload: json.RawMessage(`{"payment_intent_id":"01a2-intent","amount":1250,"currency":"EUR","description":"Spa day","account":"acct_tenantOne","expires_at":` +
			strconv.FormatInt(expires, 10) + `,"await_step":"payment_links"}`)}
	rec, err := p.Write(ctx, create)
	if err != nil {
		t.Fatalf("create the Checkout Session: %v", err)
	}
	if !strings.HasPrefix(rec.ID, "cs_") || rec.Data["id"] != rec.ID || rec.Data["url"] == "" {
		t.Fatalf("session record %+v, want its id and URL in Data", rec)
	}
	// stripe-mock's session is a fixture: open, so the wait goes on.
	paid := provider.Write{Capability: provider.Links, Key: key + "-paid", ExternalRef: "01a2-link/payment_links", Operation: LinkOperation,
		Payload: json.RawMessage(`{"payment_intent_id":"01a2-intent","session":"` + rec.ID + `","account":"acct_tenantOne"}`)}
	if _, err := p.Write(ctx, paid); err != nil && !errors.Is(err, provider.ErrWaiting) {
		if _, rejected := err.(*provider.Rejected); !rejected {
			t.Fatalf("check the session's payment: %v, want an answer from the session's state", err)
		}
	}
	if _, _, err := p.LookupWrite(ctx, create); err != nil {
		t.Fatalf("find the session by its key: %v", err)
	}

	var created, retrieved, listed bool
	for _, r := range rc.all() {
		if r.status >= 300 {
			t.Errorf("stripe-mock refused %s %s: %d", r.method, r.path, r.status)
		}
		if r.account != "acct_tenantOne" {
			t.Errorf("%s %s carried Stripe-Account %q, want the tenant's", r.method, r.path, r.account)
		}
		switch {
		case r.method == http.MethodPost && r.path == "/v1/checkout/sessions":
			f := r.form
			created = r.key == key && f.Get("mode") == "payment" && f.Get("line_items[0][price_data][unit_amount]") == "1250" &&
				f.Get("line_items[0][price_data][currency]") == "eur" && f.Get("line_items[0][quantity]") == "1" &&
				f.Get("line_items[0][price_data][product_data][name]") == "Spa day" &&
				f.Get("expires_at") == strconv.FormatInt(expires, 10) &&
				f.Get("metadata["+MetaKey+"]") == key && f.Get("metadata["+MetaAction+"]") == "01a2-link" &&
				f.Get("metadata["+MetaStep+"]") == "payment_links" && f.Get("metadata["+MetaIntent+"]") == "01a2-intent" &&
				f.Get("payment_intent_data[metadata]["+MetaAction+"]") == "01a2-link" &&
				f.Get("payment_intent_data[metadata]["+MetaStep+"]") == "payment_links"
		case r.method == http.MethodGet && r.path == "/v1/checkout/sessions/"+rec.ID:
			retrieved = true
		case r.method == http.MethodGet && r.path == "/v1/checkout/sessions":
			listed = true
		}
	}
	if !created || !retrieved || !listed {
		t.Fatalf("session created %v, retrieved %v, listed %v; requests %+v", created, retrieved, listed, rc.all())
	}
}

// A withdrawal's cancel of a hold, as stripe-mock accepts it: under the
// step's key with the /cancel suffix, on the hold's account.
func TestStripeMockAcceptsTheWithdrawalsCancel(t *testing.T) {
	t.Parallel()
	base, rc := proxy(t, stripemock.Start(t))
	p, err := New(Config{SecretKey: "sk_test_123", BaseURL: base, Account: "acct_processDefault"})
	if err != nil {
		t.Fatal(err)
	}
	key := "oc-11111111111111111111111111111111deadbeef"
	w := provider.Write{Capability: provider.Holds, Key: key, ExternalRef: "01a2-cancel/payment_holds", Operation: CancelOperation,
		Payload: json.RawMessage(`{"payment_intent_id":"01a2-intent","hold":"pi_1Held","account":"acct_tenantOne"}`)}
	// stripe-mock answers with a fixture whatever the state: the adapter
	// reads the PaymentIntent for its evidence either way.
	_, _ = p.Write(t.Context(), w)
	var cancelled bool
	for _, r := range rc.all() {
		if r.status >= 300 {
			t.Errorf("stripe-mock refused %s %s: %d", r.method, r.path, r.status)
		}
		if r.account != "acct_tenantOne" {
			t.Errorf("%s %s carried Stripe-Account %q, want the hold's", r.method, r.path, r.account)
		}
		switch {
		case r.method == http.MethodPost && r.path == "/v1/payment_intents/pi_1Held/cancel":
			cancelled = r.key == key+"/cancel"
		}
	}
	if !cancelled {
		t.Fatalf("no cancel under %s/cancel: %+v", key, rc.all())
	}
}
