package providersim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// The Stripe mode: the subset of Stripe's API oncecall's Stripe adapter
// uses (PaymentIntents with manual capture: create and confirm, retrieve,
// capture, cancel, search by metadata), stateful, with Stripe's
// idempotency rules (a key replays its first answer, a 500 included, for
// KeyRetention; another request under it is an idempotency_error; a request
// while it is in flight is 409 idempotency_key_in_use) and signed webhooks
// sent to Config.StripeWebhookURL before the API answers. The payments
// faults apply: drop_response and fail_after_commit commit first (a 500
// after commit is stored under the key, as Stripe does), fail_before_commit
// and down change nothing, delay waits before processing, lookup_lag hides
// new intents from search.

// StripePaymentIntent is the simulator's PaymentIntent.
type StripePaymentIntent struct {
	ID               string `json:"id"`
	Object           string `json:"object"`
	Amount           int64  `json:"amount"`
	AmountCapturable int64  `json:"amount_capturable"`
	AmountReceived   int64  `json:"amount_received"`
	Currency         string `json:"currency"`
	CaptureMethod    string `json:"capture_method"`
	Status           string `json:"status"`
	PaymentMethod    string `json:"payment_method"`
	// Customer is the Stripe customer of a saved card; OffSession is set
	// when the confirmation said the cardholder is not present.
	Customer   string            `json:"customer,omitempty"`
	OffSession bool              `json:"oncecall_sim_off_session"`
	Metadata   map[string]string `json:"metadata"`
	Created    int64             `json:"created"`
	Livemode   bool              `json:"livemode"`
	// LatestCharge is the hold's charge (always expanded here), with its
	// capture deadline.
	LatestCharge *StripeCharge `json:"latest_charge,omitempty"`
	// Captures counts successful captures: the audit expects at most one.
	Captures int `json:"oncecall_sim_captures"`
	// Account is the connected account (Stripe-Account) the PaymentIntent
	// was created on; "" for the platform's own. Requests on another
	// account do not see it, as with Stripe Connect.
	Account string `json:"oncecall_sim_account"`

	searchableAt, created time.Time
}

// StripeCharge is the simulator's Charge: only what a hold's deadline needs.
type StripeCharge struct {
	ID                   string `json:"id"`
	Object               string `json:"object"`
	PaymentMethodDetails struct {
		Type string `json:"type"`
		Card struct {
			CaptureBefore int64 `json:"capture_before"`
		} `json:"card"`
	} `json:"payment_method_details"`
}

type stripeKeyed struct {
	hash     string
	inFlight bool
	status   int
	body     []byte
	at       time.Time
}

type stripeState struct {
	mu      sync.Mutex
	seq     int
	intents map[string]*StripePaymentIntent
	order   []string
	keys    map[string]*stripeKeyed
	events  int
	// sessions are the Checkout Sessions (stripe_checkout.go).
	sessions     map[string]*StripeCheckoutSession
	sessionOrder []string
	// webhook and secret: where events go and what signs them.
	webhook, secret string
}

func newStripeState() *stripeState {
	return &stripeState{intents: map[string]*StripePaymentIntent{}, keys: map[string]*stripeKeyed{}}
}

// SetStripeWebhook points the Stripe mode's webhooks at url, signed with
// secret (Config.StripeWebhookURL and StripeWebhookSecret at start).
func (m *Main) SetStripeWebhook(url, secret string) {
	m.stripe.mu.Lock()
	defer m.stripe.mu.Unlock()
	m.stripe.webhook, m.stripe.secret = url, secret
}

func (st *stripeState) inFlight() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for _, k := range st.keys {
		if k.inFlight {
			n++
		}
	}
	return n
}

// StripeDeclinedMethod is the test payment method every confirmation of
// declines (card_declined), as in Stripe's test mode.
const StripeDeclinedMethod = "pm_card_chargeDeclined"

// StripeAuthenticationMethod is the test payment method whose bank asks the
// cardholder to authenticate: an off-session confirmation of it fails with
// the card error authentication_required, as in Stripe's test mode.
const StripeAuthenticationMethod = "pm_card_authenticationRequired"

func (m *Main) stripeRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/payment_intents", m.stripeCreate)
	mux.HandleFunc("GET /v1/payment_intents/search", m.stripeSearch)
	mux.HandleFunc("GET /v1/payment_intents/{id}", m.stripeRetrieve)
	mux.HandleFunc("POST /v1/payment_intents/{id}/capture", m.stripeCapture)
	mux.HandleFunc("POST /v1/payment_intents/{id}/cancel", m.stripeCancel)
	mux.HandleFunc("GET /stripe/ledger", m.stripeLedger)
	m.stripeCheckoutRoutes(mux)
}

func stripeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}})
}

// stripePost runs one POST under Stripe's idempotency rules and the
// payments faults. op runs under the state's lock and returns the answer
// and the events it caused.
func (m *Main) stripePost(w http.ResponseWriter, r *http.Request, kind string, op func(form url.Values, now time.Time) (int, any, []stripeEvent)) {
	logOf(r).capability = Payments
	if err := r.ParseForm(); err != nil {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "the form body cannot be read")
		return
	}
	f, ok := m.faultsFor(w, r, Payments, kind)
	if !ok {
		return
	}
	if f.down {
		closeConn(w, r, "down")
		return
	}
	st := m.stripe
	key := r.Header.Get("Idempotency-Key")
	if key != "" {
		key = r.Header.Get("Stripe-Account") + "\x00" + key
	}
	hash := formHash(r.URL.Path, r.PostForm)
	now := m.cfg.Now()
	st.mu.Lock()
	if k, ok := st.keys[key]; key != "" && ok && now.Sub(k.at) < m.cfg.KeyRetention {
		st.mu.Unlock()
		switch {
		case k.hash != hash:
			stripeError(w, http.StatusBadRequest, "idempotency_error", "idempotency_key_reused",
				"Keys for idempotent requests can only be used with the same parameters they were first used with.")
		case k.inFlight:
			stripeError(w, http.StatusConflict, "invalid_request_error", "idempotency_key_in_use",
				"There is currently another in-progress request using this Idempotent Key.")
		default:
			logOf(r).replayed = true
			m.stripeAnswer(w, r, k.status, k.body, f, true)
		}
		return
	}
	if key != "" {
		st.keys[key] = &stripeKeyed{hash: hash, inFlight: true, at: now}
	}
	st.mu.Unlock()
	forget := func() {
		if key != "" {
			st.mu.Lock()
			delete(st.keys, key)
			st.mu.Unlock()
		}
	}
	if !m.sleep(f.delay) {
		forget()
		stripeError(w, http.StatusServiceUnavailable, "api_error", "", "the simulator is shutting down; nothing was written")
		return
	}
	if f.failBefore {
		forget()
		stripeError(w, http.StatusServiceUnavailable, "api_error", "", "simulated failure before commit; nothing was written")
		return
	}
	st.mu.Lock()
	status, v, events := op(r.PostForm, now)
	body, _ := json.Marshal(v)
	if f.failAfter {
		// Stripe stores an endpoint's 500 under its key: replays get it too.
		status, body = http.StatusInternalServerError, []byte(`{"error":{"type":"api_error","message":"simulated failure after commit"}}`)
	}
	if key != "" {
		st.keys[key] = &stripeKeyed{hash: hash, status: status, body: body, at: now}
	}
	if f.lookupLag > 0 {
		for _, e := range events {
			if pi := st.intents[e.pi.ID]; pi != nil && pi.searchableAt.IsZero() {
				pi.searchableAt = now.Add(f.lookupLag)
			}
		}
	}
	st.mu.Unlock()
	// Webhooks go out before the answer: a client can hear of a write
	// from Stripe before its own request returns.
	for _, e := range events {
		m.stripeDeliver(e)
	}
	m.stripeAnswer(w, r, status, body, f, false)
}

func (m *Main) stripeAnswer(w http.ResponseWriter, r *http.Request, status int, body []byte, f faults, replayed bool) {
	switch {
	case f.drop:
		closeConn(w, r, "dropped_after_commit")
		return
	case f.failAfter && replayed:
		status, body = http.StatusInternalServerError, []byte(`{"error":{"type":"api_error","message":"simulated failure after commit"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// formHash identifies a request's parameters, for key reuse checks.
func formHash(path string, form url.Values) string {
	h := sha256.New()
	h.Write([]byte(path))
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\x00%s=%s", k, strings.Join(form[k], "\x01"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (m *Main) stripeCreate(w http.ResponseWriter, r *http.Request) {
	account := r.Header.Get("Stripe-Account")
	m.stripePost(w, r, OnWrite, func(form url.Values, now time.Time) (int, any, []stripeEvent) {
		st := m.stripe
		amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
		if err != nil || amount <= 0 || form.Get("currency") == "" {
			return http.StatusBadRequest, errBody("invalid_request_error", "parameter_missing", "amount and currency are required", nil), nil
		}
		st.seq++
		pi := &StripePaymentIntent{
			ID: fmt.Sprintf("pi_sim%06d", st.seq), Object: "payment_intent", Amount: amount, Currency: form.Get("currency"),
			CaptureMethod: form.Get("capture_method"), Status: "requires_payment_method", PaymentMethod: form.Get("payment_method"),
			Metadata: map[string]string{}, Created: now.Unix(), created: now, Account: account,
			Customer: form.Get("customer"), OffSession: form.Get("off_session") == "true",
		}
		if pi.CaptureMethod == "" {
			pi.CaptureMethod = "automatic"
		}
		for k, v := range form {
			if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") && len(v) > 0 {
				pi.Metadata[strings.TrimSuffix(name, "]")] = v[0]
			}
		}
		st.intents[pi.ID] = pi
		st.order = append(st.order, pi.ID)
		if form.Get("confirm") != "true" || pi.PaymentMethod == "" {
			return http.StatusOK, pi, nil
		}
		if pi.PaymentMethod == StripeAuthenticationMethod && pi.OffSession {
			c := *pi
			body := errBody("card_error", "authentication_required", "Your card was declined. This transaction requires authentication.", &c)
			body["error"].(map[string]any)["decline_code"] = "authentication_required"
			return http.StatusPaymentRequired, body, []stripeEvent{{typ: "payment_intent.payment_failed", pi: c}}
		}
		if pi.PaymentMethod == StripeDeclinedMethod {
			c := *pi
			return http.StatusPaymentRequired, errBody("card_error", "card_declined", "Your card was declined.", &c),
				[]stripeEvent{{typ: "payment_intent.payment_failed", pi: c}}
		}
		if pi.CaptureMethod == "manual" {
			pi.Status, pi.AmountCapturable = "requires_capture", amount
			ch := &StripeCharge{ID: fmt.Sprintf("ch_sim%06d", st.seq), Object: "charge"}
			ch.PaymentMethodDetails.Type = "card"
			ch.PaymentMethodDetails.Card.CaptureBefore = now.Add(m.cfg.StripeCaptureWindow).Unix()
			pi.LatestCharge = ch
			return http.StatusOK, *pi, []stripeEvent{{typ: "payment_intent.amount_capturable_updated", pi: *pi}}
		}
		pi.Status, pi.AmountReceived = "succeeded", amount
		pi.Captures++
		return http.StatusOK, *pi, []stripeEvent{{typ: "payment_intent.succeeded", pi: *pi}}
	})
}

func errBody(typ, code, msg string, pi *StripePaymentIntent) map[string]any {
	e := map[string]any{"type": typ, "code": code, "message": msg}
	if pi != nil {
		e["payment_intent"] = pi
		if typ == "card_error" {
			e["decline_code"] = "generic_decline"
		}
	}
	return map[string]any{"error": e}
}

func (m *Main) stripeCapture(w http.ResponseWriter, r *http.Request) {
	id, account := r.PathValue("id"), r.Header.Get("Stripe-Account")
	m.stripePost(w, r, OnCapture, func(form url.Values, now time.Time) (int, any, []stripeEvent) {
		pi := m.stripe.on(account, id)
		if pi == nil {
			return http.StatusNotFound, errBody("invalid_request_error", "resource_missing", "No such payment_intent", nil), nil
		}
		if pi.Status != "requires_capture" {
			return http.StatusBadRequest, errBody("invalid_request_error", "payment_intent_unexpected_state",
				"This PaymentIntent could not be captured because it has a status of "+pi.Status+".", pi), nil
		}
		amount := pi.AmountCapturable
		if v := form.Get("amount_to_capture"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || n > pi.AmountCapturable {
				return http.StatusBadRequest, errBody("invalid_request_error", "amount_too_large", "amount_to_capture is more than the amount capturable", nil), nil
			}
			amount = n
		}
		// The metadata is replaced, not changed in place: copies of pi the
		// ledger or an event handed out share the old map and are encoded
		// outside the lock.
		metadata := maps.Clone(pi.Metadata)
		for k, v := range form {
			if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") && len(v) > 0 {
				metadata[strings.TrimSuffix(name, "]")] = v[0]
			}
		}
		pi.Metadata = metadata
		pi.Status, pi.AmountReceived, pi.AmountCapturable = "succeeded", amount, 0
		pi.Captures++
		return http.StatusOK, *pi, []stripeEvent{{typ: "payment_intent.succeeded", pi: *pi}}
	})
}

func (m *Main) stripeCancel(w http.ResponseWriter, r *http.Request) {
	id, account := r.PathValue("id"), r.Header.Get("Stripe-Account")
	m.stripePost(w, r, OnWrite, func(form url.Values, now time.Time) (int, any, []stripeEvent) {
		pi := m.stripe.on(account, id)
		if pi == nil {
			return http.StatusNotFound, errBody("invalid_request_error", "resource_missing", "No such payment_intent", nil), nil
		}
		if pi.Status == "succeeded" || pi.Status == "canceled" {
			return http.StatusBadRequest, errBody("invalid_request_error", "payment_intent_unexpected_state",
				"This PaymentIntent could not be canceled because it has a status of "+pi.Status+".", pi), nil
		}
		pi.Status, pi.AmountCapturable = "canceled", 0
		return http.StatusOK, *pi, []stripeEvent{{typ: "payment_intent.canceled", pi: *pi}}
	})
}

func (m *Main) stripeRetrieve(w http.ResponseWriter, r *http.Request) {
	logOf(r).capability = Payments
	f, ok := m.faultsFor(w, r, Payments, OnLookup)
	if !ok {
		return
	}
	if f.down {
		closeConn(w, r, "down")
		return
	}
	m.stripe.mu.Lock()
	pi := m.stripe.on(r.Header.Get("Stripe-Account"), r.PathValue("id"))
	var c StripePaymentIntent
	if pi != nil {
		c = *pi
	}
	m.stripe.mu.Unlock()
	if pi == nil {
		stripeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "No such payment_intent")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// stripeSearch answers metadata['k']:'v' queries joined by AND.
func (m *Main) stripeSearch(w http.ResponseWriter, r *http.Request) {
	logOf(r).capability = Payments
	f, ok := m.faultsFor(w, r, Payments, OnLookup)
	if !ok {
		return
	}
	if f.down {
		closeConn(w, r, "down")
		return
	}
	want := map[string]string{}
	for clause := range strings.SplitSeq(r.URL.Query().Get("query"), " AND ") {
		k, v, ok := strings.Cut(strings.TrimSpace(clause), ":")
		name, isMeta := strings.CutPrefix(k, "metadata['")
		if !ok || !isMeta || !strings.HasSuffix(name, "']") {
			stripeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "the simulator searches metadata['key']:'value' only")
			return
		}
		want[strings.TrimSuffix(name, "']")] = strings.Trim(v, "'")
	}
	now := m.cfg.Now()
	m.stripe.mu.Lock()
	data := []StripePaymentIntent{}
	for _, id := range m.stripe.order {
		pi := m.stripe.intents[id]
		if !pi.searchableAt.IsZero() && now.Before(pi.searchableAt) || f.lookupLag > 0 && now.Before(pi.created.Add(f.lookupLag)) {
			continue
		}
		match := pi.Account == r.Header.Get("Stripe-Account")
		for k, v := range want {
			match = match && pi.Metadata[k] == v
		}
		if match {
			data = append(data, *pi)
		}
	}
	m.stripe.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": "search_result", "data": data, "has_more": false, "url": "/v1/payment_intents/search"})
}

// on is the PaymentIntent id as seen from account: nil when it does not
// exist there. Called with st.mu held.
func (st *stripeState) on(account, id string) *StripePaymentIntent {
	if pi := st.intents[id]; pi != nil && pi.Account == account {
		return pi
	}
	return nil
}

// StripeLedger lists every PaymentIntent with its capture count.
func (m *Main) StripeLedger() []StripePaymentIntent {
	m.stripe.mu.Lock()
	defer m.stripe.mu.Unlock()
	out := make([]StripePaymentIntent, 0, len(m.stripe.order))
	for _, id := range m.stripe.order {
		out = append(out, *m.stripe.intents[id])
	}
	return out
}

func (m *Main) stripeLedger(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"payment_intents": m.StripeLedger()})
}

// stripeEvent is one webhook event about a PaymentIntent, or about
// another object (obj, a Checkout Session).
type stripeEvent struct {
	typ string
	pi  StripePaymentIntent
	obj any
}

// stripeDeliver posts a signed event to the webhook URL, like Stripe:
// "Stripe-Signature: t=...,v1=..." over the raw body with the endpoint's
// secret. A delivery that fails is not retried (the adapter must not need
// webhooks).
func (m *Main) stripeDeliver(e stripeEvent) {
	m.stripe.mu.Lock()
	m.stripe.events++
	n, target, secret := m.stripe.events, m.stripe.webhook, m.stripe.secret
	m.stripe.mu.Unlock()
	if target == "" {
		return
	}
	var what any = e.pi
	if e.obj != nil {
		what = e.obj
	}
	obj, _ := json.Marshal(what)
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("evt_sim%06d", n), "object": "event", "type": e.typ, "api_version": stripe.APIVersion,
		"created": m.cfg.Now().Unix(), "livemode": false, "data": map[string]any{"object": json.RawMessage(obj)},
	})
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: m.cfg.Now()})
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", signed.Header)
	c := &http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
	}
}
