package payment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/wire"
)

// HoldRequest is what a payments provider that holds at approval time
// (provider.Holds) is asked to hold: the approved amount on the intent's
// payment method, on the tenant's account. IntentID is the approving
// action's id, which the intent takes once the hold is confirmed.
type HoldRequest struct {
	IntentID      string `json:"payment_intent_id"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
	// Customer is the Stripe customer of a saved card: the hold is made
	// off-session.
	Customer string `json:"customer,omitempty"`
	// Account is the tenant's connected account (Stripe-Account); "" for
	// the provider's default.
	Account string `json:"account,omitempty"`
}

// holdRemote makes the approval a hold when a payments provider that holds
// serves provider.Holds: the customer is checked and the tenant's account
// read in the claim's transaction, the hold is the approval's required
// step (its provider key is the hold's idempotency key), and the intent is
// recorded with the hold's reference and capture deadline once the hold is
// confirmed. A refused hold rejects the approval: no intent exists.
type holdRemote struct{}

func (holdRemote) Capability() string { return provider.Holds }

func (holdRemote) Payload(in IntentInput) any { return in }

// An intent paid by a payment link holds nothing: it is approved
// in oncecall's tables whatever the provider.
func (holdRemote) Local(in IntentInput) bool { return in.PaymentMethod == MethodLink }

func (holdRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in IntentInput) (op.Reservation, error) {
	ok, err := tx.CustomerExists(ctx, x.TenantID, op.MustUUID(in.CustomerID))
	if err != nil {
		return op.Reservation{}, err
	}
	if !ok {
		res, err := op.Reject(CustomerNotFound, map[string]string{"customer_id": in.CustomerID})
		return op.Reservation{Reject: &res}, err
	}
	account, err := tx.TenantStripeAccount(ctx, x.TenantID)
	if err != nil {
		return op.Reservation{}, err
	}
	return op.Reservation{Payload: HoldRequest{
		IntentID: x.ActionID.String(), Amount: in.Amount.Int64(), Currency: in.Currency,
		PaymentMethod: in.PaymentMethod, Customer: in.StripeCustomer, Account: account,
	}}, nil
}

func (holdRemote) Confirmed(in IntentInput, rec provider.Record) (idem.Result, error) {
	id, _, _ := strings.Cut(rec.ExternalRef, "/")
	intent, err := uuid.Parse(id)
	if err != nil {
		return idem.Result{}, fmt.Errorf("held intent's reference %q: %w", rec.ExternalRef, err)
	}
	// The intent as the local one reads, with the provider's
	// reference of the hold.
	return op.Confirm(http.StatusCreated, id, wire.PaymentIntent{
		ID: intent, CustomerID: op.MustUUID(in.CustomerID), Amount: in.Amount.Int64(), Currency: in.Currency,
		Description: in.Description, PaymentMethod: in.PaymentMethod, Status: oncecall.IntentRequiresCapture,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond), ProviderRef: rec.ID,
	})
}

func (holdRemote) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, in IntentInput, res idem.Result, providerRef string) error {
	if res.Outcome != idem.Confirmed {
		return nil // refused: the adapter released what it held; no intent
	}
	var h wire.PaymentIntent
	if err := json.Unmarshal(res.Body, &h); err != nil {
		return fmt.Errorf("read the held intent's answer: %w", err)
	}
	if h.ID != x.ActionID {
		return fmt.Errorf("held intent %s answered for action %s", h.ID, x.ActionID)
	}
	var req HoldRequest
	if err := holdPayload(ctx, tx, x.ActionID, &req); err != nil {
		return err
	}
	_, err := tx.CreateHeldPaymentIntent(ctx, oncecall.NewHeldIntent{
		TenantID: x.TenantID, ActionID: x.ActionID, CustomerID: op.MustUUID(in.CustomerID), Amount: in.Amount.Int64(),
		Currency: in.Currency, Description: in.Description, PaymentMethod: in.PaymentMethod,
		HoldRef: providerRef, HoldAccount: req.Account, CreatedAt: h.CreatedAt,
	})
	return err
}

// holdPayload reads the hold request recorded with the approval's step:
// the account the hold was made on, whatever the tenant's account is now.
func holdPayload(ctx context.Context, tx *db.Tx, action uuid.UUID, req *HoldRequest) error {
	steps, err := tx.Steps(ctx, action)
	if err != nil {
		return err
	}
	for _, s := range steps {
		if s.Required {
			return json.Unmarshal(s.Payload, req)
		}
	}
	return fmt.Errorf("action %s has no hold step", action)
}
