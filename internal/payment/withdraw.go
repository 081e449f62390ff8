package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/wire"
)

// CancelOperation is the hold's cancellation at the provider.
const CancelOperation = "payment_intent.cancel"

// CancelInput is the input of payment_intent.cancel.
type CancelInput struct {
	PaymentIntentID string `json:"payment_intent_id" required:"true" format:"uuid" desc:"The approved payment intent to withdraw."`
}

// CancelRequest is what the provider that holds (provider.Holds) is asked
// to cancel: the intent's hold on the account it was made on.
type CancelRequest struct {
	IntentID string `json:"payment_intent_id"`
	Hold     string `json:"hold"`
	Account  string `json:"account,omitempty"`
}

// Cancel withdraws an approved intent that is not charged: it can no
// longer be charged, and its hold, if any, is cancelled at the provider.
// It is not offered to voice agents: approvals are the business's.
var Cancel = family.Add(op.Define(op.Spec[CancelInput]{
	Name:    "payment_intent.cancel",
	Label:   "Payment approval withdrawn",
	Version: 1,
	Logic:   cancelOp{},
	Remote:  cancelRemote{},
	Say: op.Phrases{
		Confirmed: "The payment approval is withdrawn; nothing will be charged.",
		Rejected: map[string]string{
			IntentNotFound:   "The approved payment was not found.",
			AlreadyCaptured:  "The payment was already charged; it cannot be withdrawn.",
			ChargeInProgress: "A charge of this payment is still being processed; it cannot be withdrawn now.",
			Withdrawn:        "The payment approval was already withdrawn.",
			HoldExpired:      "The payment's card hold already expired; nothing will be charged.",
			"":               "The payment approval was not withdrawn.",
		},
		Pending: "The withdrawal of the payment approval is NOT confirmed yet and its result is unknown.",
	},
}))

// cancelOp is the logic of Cancel.
type cancelOp struct{}

func (cancelOp) Normalize(in *CancelInput) error {
	return op.ID("payment_intent_id", &in.PaymentIntentID)
}

func (cancelOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput) (idem.Result, error) {
	pi, rejected, err := withdrawable(ctx, tx, x, in)
	if err != nil || rejected != nil {
		return derefResult(rejected), err
	}
	return withdrawLocally(ctx, tx, x, pi, "")
}

func derefResult(r *idem.Result) idem.Result {
	if r == nil {
		return idem.Result{}
	}
	return *r
}

// withdrawable locks the tenant's intent and checks that it may be
// withdrawn: approved, not captured, not withdrawn or expired, no charge of
// it in flight.
func withdrawable(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput) (oncecall.PaymentIntent, *idem.Result, error) {
	reject := func(reason string) (oncecall.PaymentIntent, *idem.Result, error) {
		res, err := op.Reject(reason, map[string]string{"payment_intent_id": in.PaymentIntentID})
		return oncecall.PaymentIntent{}, &res, err
	}
	pi, err := tx.LockPaymentIntent(ctx, x.TenantID, op.MustUUID(in.PaymentIntentID))
	switch {
	case errors.Is(err, db.ErrNotFound):
		return reject(IntentNotFound)
	case err != nil:
		return pi, nil, err
	case pi.Status == oncecall.IntentCaptured:
		return reject(AlreadyCaptured)
	case pi.Status == oncecall.IntentWithdrawn:
		return reject(Withdrawn)
	case pi.Status == oncecall.IntentExpired:
		return reject(HoldExpired)
	case pi.ChargingAction != uuid.Nil && pi.ChargingAction != x.ActionID:
		return reject(ChargeInProgress)
	}
	return pi, nil, nil
}

// withdrawLocally marks the intent withdrawn in the claim's transaction.
func withdrawLocally(ctx context.Context, tx *db.Tx, x idem.Exec, pi oncecall.PaymentIntent, hold string) (idem.Result, error) {
	ok, err := tx.WithdrawPaymentIntent(ctx, x.TenantID, pi.ID, x.ActionID)
	if err != nil {
		return idem.Result{}, err
	}
	if !ok {
		return idem.Result{}, fmt.Errorf("withdraw payment intent %s: changed under its lock", pi.ID)
	}
	return op.Confirm(http.StatusOK, pi.ID.String(), wire.WithdrawnPaymentIntent{ID: pi.ID, Status: oncecall.IntentWithdrawn, ProviderRef: hold})
}

// cancelRemote withdraws through the provider that holds (Stripe): an
// intent without a hold is withdrawn in the claim's transaction; one with a
// hold is held for the action (no charge can start) while the hold is
// cancelled under the step's key, and withdrawn once the provider says
// the hold is cancelled. A hold the provider says was captured meanwhile
// is not withdrawn.
type cancelRemote struct{}

func (cancelRemote) Capability() string { return provider.Holds }

func (cancelRemote) Payload(in CancelInput) any { return in }

func (cancelRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput) (op.Reservation, error) {
	pi, rejected, err := withdrawable(ctx, tx, x, in)
	if err != nil || rejected != nil {
		return op.Reservation{Reject: rejected}, err
	}
	hold, err := tx.PaymentIntentHold(ctx, x.TenantID, pi.ID)
	if err != nil {
		return op.Reservation{}, err
	}
	if hold.Ref == "" {
		res, err := withdrawLocally(ctx, tx, x, pi, "")
		return op.Reservation{Done: &res}, err
	}
	held, err := tx.HoldPaymentIntent(ctx, x.TenantID, pi.ID, x.ActionID)
	if err != nil {
		return op.Reservation{}, err
	}
	if !held {
		return op.Reservation{}, fmt.Errorf("hold payment intent %s: held by another action under its lock", pi.ID)
	}
	return op.Reservation{Payload: CancelRequest{IntentID: in.PaymentIntentID, Hold: hold.Ref, Account: hold.Account}}, nil
}

func (cancelRemote) Confirmed(in CancelInput, rec provider.Record) (idem.Result, error) {
	return op.Confirm(http.StatusOK, in.PaymentIntentID, wire.WithdrawnPaymentIntent{
		ID: op.MustUUID(in.PaymentIntentID), Status: oncecall.IntentWithdrawn, ProviderRef: rec.ID,
	})
}

func (cancelRemote) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput, res idem.Result, _ string) error {
	id := op.MustUUID(in.PaymentIntentID)
	if res.Outcome != idem.Confirmed {
		return tx.ReleasePaymentIntent(ctx, x.TenantID, id, x.ActionID)
	}
	if _, err := tx.WithdrawPaymentIntent(ctx, x.TenantID, id, x.ActionID); err != nil {
		return fmt.Errorf("withdraw intent %s: %w", id, err)
	}
	return nil
}
