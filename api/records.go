package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/wire"
)

// getRecord answers GET for one of the tenant's records named by the URL
// parameter param. An id that is malformed, missing or another tenant's is
// the same 404.
func getRecord[T any](s *Server, param, what string, find func(ctx context.Context, tenant, id uuid.UUID) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := uuid.Parse(chi.URLParam(r, param))
		if err != nil {
			writeError(w, r, fault.New(fault.NotFound, "no such %s", what))
			return
		}
		v, err := find(r.Context(), tenantFrom(r.Context()).ID, id)
		if err != nil {
			writeError(w, r, readErr(err, what))
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// readErr maps a failed lookup: no row is 404, an unreachable database 503.
func readErr(err error, what string) error {
	if errors.Is(err, db.ErrNotFound) {
		return fault.New(fault.NotFound, "no such %s", what)
	}
	return db.Fault(err)
}

// paymentIntentView is an intent with its charge attempts.
type paymentIntentView struct {
	wire.PaymentIntent
	Payments []wire.Payment `json:"payments"`
}

func (s *Server) getPaymentIntent(w http.ResponseWriter, r *http.Request) {
	getRecord(s, "payment_intent_id", "payment intent", func(ctx context.Context, tenant, id uuid.UUID) (paymentIntentView, error) {
		pi, err := s.cfg.Store.PaymentIntentByID(ctx, tenant, id)
		if err != nil {
			return paymentIntentView{}, err
		}
		payments, err := s.cfg.Store.PaymentsByIntent(ctx, tenant, id)
		return paymentIntentView{PaymentIntent: wire.FromPaymentIntent(pi), Payments: wire.FromPayments(payments)}, err
	})(w, r)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	getRecord(s, "message_id", "message", viewed(s.cfg.Store.MessageByID, wire.FromMessage))(w, r)
}

func (s *Server) getCustomer(w http.ResponseWriter, r *http.Request) {
	getRecord(s, "customer_id", "customer", viewed(s.cfg.Store.CustomerByID, wire.FromCustomer))(w, r)
}
