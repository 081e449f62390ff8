package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
)

// stripeClockSkew is how far in the future a Stripe signature's timestamp
// may be. stripe-go refuses only a signature older than its tolerance (five
// minutes): one made in the future, by a leaked secret's holder to outlast
// that tolerance, would pass.
const stripeClockSkew = time.Minute

// stripeSignedAt is the timestamp of a Stripe-Signature header
// ("t=<unix seconds>,v1=<hex>,..."), read as stripe-go reads it: the last t.
func stripeSignedAt(header string) (time.Time, bool) {
	var at time.Time
	ok := false
	for part := range strings.SplitSeq(header, ",") {
		v, found := strings.CutPrefix(part, "t=")
		if !found {
			continue
		}
		unix, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		at, ok = time.Unix(unix, 0), true
	}
	return at, ok
}

// stripeNotice is the answer to a verified Stripe webhook: matched tells
// whether it named a step whose outcome was unknown.
type stripeNotice struct {
	Received bool `json:"received"`
	Matched  bool `json:"matched"`
}

// stripeWebhook takes Stripe's events about PaymentIntents and Checkout
// Sessions (payment links) oncecall created; a session's metadata, and its
// PaymentIntent's, name the step that waits for its payment. The signature
// is verified with stripe-go's webhook package against
// STRIPE_WEBHOOK_SECRET; a forged or stale one, or one timestamped more
// than stripeClockSkew ahead, is 401 and changes nothing. A verified event
// about a step whose outcome is unknown makes that step due for a check now
// (the reconciler asks Stripe under the action's lease); every other event
// (unknown objects, other types, duplicates) is acknowledged and changes
// nothing. See docs/providers/stripe.md.
func (s *Server) stripeWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			writeError(w, r, fault.New(fault.PayloadTooLarge, "the webhook body is too large"))
			return
		}
		writeError(w, r, fault.New(fault.InvalidInput, "the webhook body cannot be read"))
		return
	}
	header := r.Header.Get("Stripe-Signature")
	ev, err := webhook.ConstructEventWithOptions(body, header, s.cfg.StripeWebhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		writeError(w, r, fault.New(fault.Unauthorized, "the Stripe-Signature header does not verify this body"))
		return
	}
	if signedAt, ok := stripeSignedAt(header); !ok || time.Until(signedAt) > stripeClockSkew {
		writeError(w, r, fault.New(fault.Unauthorized, "the Stripe-Signature header's timestamp is in the future"))
		return
	}
	if !strings.HasPrefix(string(ev.Type), "payment_intent.") && !strings.HasPrefix(string(ev.Type), "checkout.session.") || ev.Data == nil {
		writeJSON(w, http.StatusOK, stripeNotice{Received: true})
		return
	}
	var pi struct { // a PaymentIntent or a Checkout Session
		ID       string            `json:"id"`
		Status   string            `json:"status"`
		Metadata map[string]string `json:"metadata"`
	}
	action, perr := uuid.Nil, json.Unmarshal(ev.Data.Raw, &pi)
	actionKey, step := stripeprovider.MetaAction, pi.Metadata[stripeprovider.MetaStep]
	if charge := pi.Metadata[stripeprovider.MetaChargeStep]; charge != "" {
		// A hold made at approval and captured since: the event is news
		// of the charge that captured it.
		actionKey, step = stripeprovider.MetaChargeAction, charge
	}
	if perr == nil {
		action, perr = uuid.Parse(pi.Metadata[actionKey])
	}
	if perr != nil || step == "" {
		// Not a PaymentIntent of oncecall's: nothing to do.
		writeJSON(w, http.StatusOK, stripeNotice{Received: true})
		return
	}
	matched, err := s.cfg.Store.NoticeStep(r.Context(), action, step, map[string]string{
		"provider": "stripe", "event_id": ev.ID, "type": string(ev.Type), "provider_ref": pi.ID, "status": pi.Status,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, stripeNotice{Received: true, Matched: matched})
}
