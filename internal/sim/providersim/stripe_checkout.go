package providersim

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The Stripe mode's Checkout Sessions (payment links): create (under the
// idempotency rules and payments faults of every POST), retrieve (with the
// PaymentIntent expanded when asked), list by creation time, and two hooks
// for tests that stand for the customer and for time: paying a session
// (POST /stripe/checkout/{id}/pay: it completes, its PaymentIntent
// succeeds, and checkout.session.completed and payment_intent.succeeded are
// sent, signed) and expiring it (POST /stripe/checkout/{id}/expire:
// checkout.session.expired). Stripe has no search for Checkout Sessions;
// neither has the simulator.

// StripeCheckoutSession is the simulator's Checkout Session.
type StripeCheckoutSession struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Mode          string            `json:"mode"`
	Status        string            `json:"status"`
	PaymentStatus string            `json:"payment_status"`
	AmountTotal   int64             `json:"amount_total"`
	Currency      string            `json:"currency"`
	URL           string            `json:"url"`
	ExpiresAt     int64             `json:"expires_at"`
	Created       int64             `json:"created"`
	Metadata      map[string]string `json:"metadata"`
	// PaymentIntent is the id of the session's PaymentIntent once paid;
	// retrieve expands it to the object when asked.
	PaymentIntent any `json:"payment_intent"`
	// Account is the connected account the session was created on.
	Account string `json:"oncecall_sim_account"`

	piMetadata map[string]string
}

func (m *Main) stripeCheckoutRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/checkout/sessions", m.stripeCheckoutCreate)
	mux.HandleFunc("GET /v1/checkout/sessions", m.stripeCheckoutList)
	mux.HandleFunc("GET /v1/checkout/sessions/{id}", m.stripeCheckoutRetrieve)
	mux.HandleFunc("POST /stripe/checkout/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		m.checkoutHook(w, r, m.StripePay)
	})
	mux.HandleFunc("POST /stripe/checkout/{id}/expire", func(w http.ResponseWriter, r *http.Request) {
		m.checkoutHook(w, r, m.StripeExpire)
	})
}

// formMap reads the form's entries prefix[key] into a map.
func formMap(form url.Values, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range form {
		if name, ok := strings.CutPrefix(k, prefix+"["); ok && strings.HasSuffix(name, "]") && len(v) > 0 {
			out[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	return out
}

func (m *Main) stripeCheckoutCreate(w http.ResponseWriter, r *http.Request) {
	account := r.Header.Get("Stripe-Account")
	m.stripePost(w, r, OnWrite, func(form url.Values, now time.Time) (int, any, []stripeEvent) {
		st := m.stripe
		amount, err := strconv.ParseInt(form.Get("line_items[0][price_data][unit_amount]"), 10, 64)
		quantity, qerr := strconv.ParseInt(form.Get("line_items[0][quantity]"), 10, 64)
		currency := form.Get("line_items[0][price_data][currency]")
		if form.Get("mode") != "payment" || err != nil || qerr != nil || amount <= 0 || quantity <= 0 || currency == "" {
			return http.StatusBadRequest, errBody("invalid_request_error", "parameter_missing",
				"the simulator makes payment-mode sessions of one priced line item", nil), nil
		}
		expires := now.Add(24 * time.Hour).Unix()
		if v := form.Get("expires_at"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < now.Add(30*time.Minute-time.Minute).Unix() || n > now.Add(24*time.Hour).Unix() {
				return http.StatusBadRequest, errBody("invalid_request_error", "parameter_invalid_integer",
					"expires_at must be 30 minutes to 24 hours from now", nil), nil
			}
			expires = n
		}
		st.seq++
		id := fmt.Sprintf("cs_sim%06d", st.seq)
		cs := &StripeCheckoutSession{
			ID: id, Object: "checkout.session", Mode: "payment", Status: "open", PaymentStatus: "unpaid",
			AmountTotal: amount * quantity, Currency: currency, URL: "https://checkout.stripe.sim/c/pay/" + id,
			ExpiresAt: expires, Created: now.Unix(), Metadata: formMap(form, "metadata"), Account: account,
			piMetadata: formMap(form, "payment_intent_data[metadata]"),
		}
		if st.sessions == nil {
			st.sessions = map[string]*StripeCheckoutSession{}
		}
		st.sessions[id] = cs
		st.sessionOrder = append(st.sessionOrder, id)
		return http.StatusOK, *cs, nil
	})
}

// session is the Checkout Session id as seen from account. Called with
// st.mu held.
func (st *stripeState) session(account, id string) *StripeCheckoutSession {
	if cs := st.sessions[id]; cs != nil && cs.Account == account {
		return cs
	}
	return nil
}

func (m *Main) stripeCheckoutRetrieve(w http.ResponseWriter, r *http.Request) {
	logOf(r).capability = Payments
	f, ok := m.faultsFor(w, r, Payments, OnLookup)
	if !ok {
		return
	}
	if f.down {
		closeConn(w, r, "down")
		return
	}
	st := m.stripe
	st.mu.Lock()
	cs := st.session(r.Header.Get("Stripe-Account"), r.PathValue("id"))
	var c StripeCheckoutSession
	if cs != nil {
		c = *cs
		if id, ok := c.PaymentIntent.(string); ok && r.URL.Query().Get("expand[0]") == "payment_intent" {
			if pi := st.intents[id]; pi != nil {
				c.PaymentIntent = *pi
			}
		}
	}
	st.mu.Unlock()
	if cs == nil {
		stripeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "No such checkout.session")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// stripeCheckoutList lists the account's sessions, newest first, created
// at or after created[gte].
func (m *Main) stripeCheckoutList(w http.ResponseWriter, r *http.Request) {
	logOf(r).capability = Payments
	f, ok := m.faultsFor(w, r, Payments, OnLookup)
	if !ok {
		return
	}
	if f.down {
		closeConn(w, r, "down")
		return
	}
	since, _ := strconv.ParseInt(r.URL.Query().Get("created[gte]"), 10, 64)
	st := m.stripe
	st.mu.Lock()
	data := []StripeCheckoutSession{}
	for i := len(st.sessionOrder) - 1; i >= 0; i-- {
		cs := st.sessions[st.sessionOrder[i]]
		if cs.Account == r.Header.Get("Stripe-Account") && cs.Created >= since {
			data = append(data, *cs)
		}
	}
	st.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": false, "url": "/v1/checkout/sessions"})
}

func (m *Main) checkoutHook(w http.ResponseWriter, r *http.Request, do func(id string) error) {
	if err := do(r.PathValue("id")); err != nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// StripePay stands for the customer paying an open Checkout Session: it
// completes and is paid, its PaymentIntent (with the session's
// payment_intent_data metadata) succeeds, and checkout.session.completed
// and payment_intent.succeeded are sent to the webhook, signed.
func (m *Main) StripePay(id string) error {
	st := m.stripe
	now := m.cfg.Now()
	st.mu.Lock()
	cs := st.sessions[id]
	if cs == nil || cs.Status != "open" {
		st.mu.Unlock()
		return fmt.Errorf("checkout session %s is not open", id)
	}
	st.seq++
	pi := &StripePaymentIntent{
		ID: fmt.Sprintf("pi_sim%06d", st.seq), Object: "payment_intent", Amount: cs.AmountTotal, AmountReceived: cs.AmountTotal,
		Currency: cs.Currency, CaptureMethod: "automatic", Status: "succeeded", PaymentMethod: "pm_card_visa",
		Metadata: maps.Clone(cs.piMetadata), Created: now.Unix(), created: now, Account: cs.Account, Captures: 1,
	}
	st.intents[pi.ID] = pi
	st.order = append(st.order, pi.ID)
	cs.Status, cs.PaymentStatus, cs.PaymentIntent = "complete", "paid", pi.ID
	events := []stripeEvent{{typ: "checkout.session.completed", obj: *cs}, {typ: "payment_intent.succeeded", pi: *pi}}
	st.mu.Unlock()
	for _, e := range events {
		m.stripeDeliver(e)
	}
	return nil
}

// StripeExpire stands for time: an open Checkout Session expires unpaid
// and checkout.session.expired is sent.
func (m *Main) StripeExpire(id string) error {
	st := m.stripe
	st.mu.Lock()
	cs := st.sessions[id]
	if cs == nil || cs.Status != "open" {
		st.mu.Unlock()
		return fmt.Errorf("checkout session %s is not open", id)
	}
	cs.Status = "expired"
	e := stripeEvent{typ: "checkout.session.expired", obj: *cs}
	st.mu.Unlock()
	m.stripeDeliver(e)
	return nil
}

// StripeSessions lists every Checkout Session, oldest first.
func (m *Main) StripeSessions() []StripeCheckoutSession {
	m.stripe.mu.Lock()
	defer m.stripe.mu.Unlock()
	out := make([]StripeCheckoutSession, 0, len(m.stripe.sessionOrder))
	for _, id := range m.stripe.sessionOrder {
		out = append(out, *m.stripe.sessions[id])
	}
	return out
}

// ResendStripeEvent sends a signed event about a session again (a
// duplicate delivery, as Stripe may make).
func (m *Main) ResendStripeEvent(typ, id string) error {
	m.stripe.mu.Lock()
	cs := m.stripe.sessions[id]
	var c StripeCheckoutSession
	if cs != nil {
		c = *cs
	}
	m.stripe.mu.Unlock()
	if cs == nil {
		return fmt.Errorf("no checkout session %s", id)
	}
	m.stripeDeliver(stripeEvent{typ: typ, obj: c})
	return nil
}
