package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/wire"
)

// A customer's open payment intents: how a caller of charge_payment (or of
// POST /v1/payments) finds the intent to charge.

// Bounds of GET /v1/payment-intents.
const (
	defaultIntents = 20
	maxIntents     = 100
)

// openIntent is an intent with its amount as it is said.
type openIntent struct {
	wire.PaymentIntent
	AmountSpoken     string `json:"amount_spoken"`
	ChargeInProgress bool   `json:"charge_in_progress"`
}

// listPaymentIntents answers GET /v1/payment-intents?customer_id=&limit=:
// a customer's approved intents not charged yet, newest first.
func (s *Server) listPaymentIntents(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "customer_id", "limit")
	if err != nil {
		writeError(w, r, err)
		return
	}
	customer, err := requiredCustomer(q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	limit := defaultIntents
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxIntents {
			writeError(w, r, fault.Field("limit", "must be an integer from 1 to %d", maxIntents))
			return
		}
		limit = n
	}
	// One more than asked tells whether there are more.
	list, err := s.cfg.Store.ListOpenPaymentIntents(r.Context(), tenantFrom(r.Context()).ID, uuid.MustParse(customer), limit+1)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	out := make([]openIntent, len(list))
	for i, pi := range list {
		out[i] = openIntent{PaymentIntent: wire.FromPaymentIntent(pi), AmountSpoken: op.SpokenAmount(pi.Amount, pi.Currency), ChargeInProgress: pi.ChargingAction != uuid.Nil}
	}
	writeJSON(w, http.StatusOK, map[string]any{"payment_intents": out, "has_more": more})
}

func (s *Server) listPaymentIntentsTool(ctx context.Context, tenant oncecall.Tenant, raw json.RawMessage) (dashatool.Answer, error) {
	var in dashatool.IntentsInput
	if ans, ok, err := toolInput(raw, &in); !ok {
		return ans, err
	}
	customer, missing, err := s.toolCustomer(ctx, tenant, in.CustomerID)
	if err != nil || missing.Outcome != "" {
		return missing, err
	}
	list, err := s.cfg.Store.ListOpenPaymentIntents(ctx, tenant.ID, customer, in.N())
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	views := make([]dashatool.IntentView, len(list))
	for i, pi := range list {
		views[i] = dashatool.IntentViewOf(pi)
	}
	return dashatool.IntentsAnswer(in.CustomerID, views), nil
}
