package stripeprovider

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/stripemock"
)

// seen is one request that went through the recording proxy.
type seen struct {
	method, path, key, account string
	status                     int
	form                       url.Values
}

// recorder forwards to stripe-mock and keeps what each request carried and
// how stripe-mock, which validates every request against Stripe's API
// description, answered it.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) all() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

func proxy(t *testing.T, target string) (string, *recorder) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rc := &recorder{}
	rp := httputil.NewSingleHostReverseProxy(u)
	direct := rp.Director
	forms := map[string]url.Values{} // by method, path and key
	rp.Director = func(r *http.Request) {
		direct(r)
		if r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			f, _ := url.ParseQuery(string(b))
			rc.mu.Lock()
			forms[r.Method+r.URL.Path+r.Header.Get("Idempotency-Key")] = f
			rc.mu.Unlock()
		}
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, seen{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Stripe-Account"), resp.StatusCode, forms[r.Method+r.URL.Path+r.Header.Get("Idempotency-Key")]})
		rc.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, rc
}

// Every request shape the adapter sends (hold, capture, cancel, retrieve,
// search) is accepted by Stripe's stripe-mock, with the step's key as
// Idempotency-Key on every write and the connected account on every call.
func TestStripeMockAcceptsEveryRequestTheAdapterSends(t *testing.T) {
	t.Parallel()
	base, rc := proxy(t, stripemock.Start(t))
	p, err := New(Config{SecretKey: "sk_test_123", BaseURL: base, Account: "acct_1032D82eZvKYlo2C"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := "oc-0123456789abcdef0123456789abcdef01234567"
	w := provider.Write{Capability: provider.Payments, Key: key, ExternalRef: "01a2-action/payments", Operation: Operation,
		Payload: json.RawMessage(`{"payment_intent_id":"01a2-intent","amount":4500,"currency":"USD","payment_method":"pm_card_ok"}`)}

	// The whole charge: stripe-mock answers every PaymentIntent with the
	// status requires_payment_method, so an honest adapter refuses it and
	// cancels the hold instead of capturing.
	_, err = p.Write(ctx, w)
	if rej, ok := err.(*provider.Rejected); !ok || rej.Code != Declined {
		t.Fatalf("Write against stripe-mock = %v, want the rejection %s (stripe-mock's intent is not capturable)", err, Declined)
	}
	// The requests a real hold leads to.
	pi, err := p.hold(ctx, w, charge{PaymentIntentID: "01a2-intent", Amount: 4500, Currency: "USD"})
	if err != nil {
		t.Fatalf("hold: %v", err)
	}
	if _, err := p.capture(ctx, provider.Write{Key: key}, charge{Amount: 3000}, pi.ID); err != nil {
		t.Fatalf("capture: %v", err)
	}
	if _, err := p.Retrieve(ctx, "", pi.ID); err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	if _, err := p.searchPI(ctx, "", "metadata['"+MetaKey+"']:'"+key+"'"); err != nil {
		t.Fatalf("search by key: %v", err)
	}
	if _, _, err := p.LookupWrite(ctx, w); err != nil && !strings.Contains(err.Error(), "not captured") {
		t.Fatalf("lookup of the step's write: %v", err)
	}

	reqs := rc.all()
	want := map[string]bool{}
	for _, r := range reqs {
		if r.status >= 300 {
			t.Errorf("stripe-mock refused %s %s: %d", r.method, r.path, r.status)
		}
		if r.account != "acct_1032D82eZvKYlo2C" {
			t.Errorf("%s %s carried Stripe-Account %q", r.method, r.path, r.account)
		}
		if r.method == http.MethodPost && !strings.HasPrefix(r.key, key) {
			t.Errorf("%s %s carried Idempotency-Key %q, want one derived from the step's key", r.method, r.path, r.key)
		}
		switch {
		case r.path == "/v1/payment_intents" && r.key == key:
			want["create"] = true
		case strings.HasSuffix(r.path, "/capture") && r.key == key+"/capture":
			want["capture"] = true
		case strings.HasSuffix(r.path, "/cancel") && r.key == key+"/cancel":
			want["cancel"] = true
		case r.path == "/v1/payment_intents/search":
			want["search"] = true
		case r.method == http.MethodGet && strings.HasPrefix(r.path, "/v1/payment_intents/"):
			want["retrieve"] = true
		}
	}
	for _, k := range []string{"create", "capture", "cancel", "search", "retrieve"} {
		if !want[k] {
			t.Errorf("no %s request reached stripe-mock; saw %+v", k, reqs)
		}
	}
}

// The hold at approval time and its capture by a charge, on a tenant's own
// connected account: stripe-mock accepts every request (manual capture,
// confirmation, the latest charge expanded, metadata, amount_to_capture),
// each carrying the tenant's account as Stripe-Account instead of the
// process default, and the step's key as Idempotency-Key.
func TestStripeMockAcceptsTheHoldAtApprovalOnTheTenantsAccount(t *testing.T) {
	t.Parallel()
	base, rc := proxy(t, stripemock.Start(t))
	p, err := New(Config{SecretKey: "sk_test_123", BaseURL: base, Account: "acct_processDefault"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := "oc-fedcba9876543210fedcba9876543210fedcba98"
	hold := provider.Write{Capability: provider.Holds, Key: key, ExternalRef: "01a2-approval/payment_holds", Operation: HoldOperation,
		Payload: json.RawMessage(`{"payment_intent_id":"01a2-approval","amount":4500,"currency":"USD","payment_method":"pm_card_ok","account":"acct_tenantOne"}`)}
	// stripe-mock's PaymentIntent is never capturable: the hold is refused
	// honestly and released.
	if _, err := p.Write(ctx, hold); err == nil {
		t.Fatal("a hold stripe-mock does not make capturable was accepted")
	} else if rej, ok := err.(*provider.Rejected); !ok || rej.Code != Declined {
		t.Fatalf("hold = %v, want %s", err, Declined)
	}
	if _, _, err := p.LookupWrite(ctx, hold); err != nil && !strings.Contains(err.Error(), "requires_payment_method") {
		t.Fatalf("look the hold up: %v", err)
	}
	capture := provider.Write{Capability: provider.Payments, Key: key + "-charge", ExternalRef: "01a2-charge/payments", Operation: Operation,
		Payload: json.RawMessage(`{"payment_intent_id":"01a2-approval","amount":3000,"currency":"USD","hold":"pi_1Held","account":"acct_tenantOne"}`)}
	_, _ = p.Write(ctx, capture) // stripe-mock's capture answers a fixture, not a captured intent

	var created, captured bool
	for _, r := range rc.all() {
		if r.status >= 300 {
			t.Errorf("stripe-mock refused %s %s: %d", r.method, r.path, r.status)
		}
		if r.account != "acct_tenantOne" {
			t.Errorf("%s %s carried Stripe-Account %q, want the tenant's", r.method, r.path, r.account)
		}
		switch {
		case r.method == http.MethodPost && r.path == "/v1/payment_intents":
			created = r.key == key && r.form.Get("capture_method") == "manual" && r.form.Get("confirm") == "true" &&
				r.form.Get("expand[0]") == "latest_charge" && r.form.Get("metadata["+MetaAction+"]") == "01a2-approval" &&
				r.form.Get("metadata["+MetaStep+"]") == provider.Holds
		case r.path == "/v1/payment_intents/pi_1Held/capture":
			captured = r.key == key+"-charge/capture" && r.form.Get("amount_to_capture") == "3000" &&
				r.form.Get("metadata["+MetaChargeAction+"]") == "01a2-charge"
		}
	}
	if !created || !captured {
		t.Fatalf("hold sent %v, capture of the hold sent %v; requests %+v", created, captured, rc.all())
	}
}
