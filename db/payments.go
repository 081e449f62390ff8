package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// NewPaymentIntent is an intent to create.
type NewPaymentIntent struct {
	TenantID      uuid.UUID
	ActionID      uuid.UUID
	CustomerID    uuid.UUID
	Amount        int64
	Currency      string
	Description   string
	PaymentMethod string
}

// NewPayment is a provider's answer to record.
type NewPayment struct {
	TenantID    uuid.UUID
	ActionID    uuid.UUID
	IntentID    uuid.UUID
	Amount      int64
	Currency    string
	Status      string
	DeclineCode string
	ProviderRef string
}

// CreatePaymentIntent inserts an intent awaiting capture.
func (q queries) CreatePaymentIntent(ctx context.Context, in NewPaymentIntent) (oncecall.PaymentIntent, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.PaymentIntent{}, err
	}
	row, err := q.q.CreatePaymentIntent(ctx, dbsqlc.CreatePaymentIntentParams{
		ID: id, TenantID: in.TenantID, CustomerID: in.CustomerID, Amount: in.Amount, Currency: in.Currency,
		Description: in.Description, PaymentMethod: in.PaymentMethod, ActionID: in.ActionID,
	})
	if err != nil {
		return oncecall.PaymentIntent{}, err
	}
	return paymentIntent(row), nil
}

// PaymentIntentByID returns one of the tenant's intents.
func (q queries) PaymentIntentByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.PaymentIntent, error) {
	row, err := q.q.PaymentIntentByID(ctx, dbsqlc.PaymentIntentByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.PaymentIntent{}, notFound(err)
	}
	return paymentIntent(row), nil
}

// LockPaymentIntent returns one of the tenant's intents and holds its row
// lock until the transaction ends, so charges of one intent take turns.
func (t *Tx) LockPaymentIntent(ctx context.Context, tenant, id uuid.UUID) (oncecall.PaymentIntent, error) {
	row, err := t.q.LockPaymentIntent(ctx, dbsqlc.LockPaymentIntentParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.PaymentIntent{}, notFound(err)
	}
	return paymentIntent(row), nil
}

// CapturePaymentIntent marks an intent captured for amount; ErrNotFound when
// it is missing or already captured.
func (q queries) CapturePaymentIntent(ctx context.Context, tenant, id uuid.UUID, amount int64) (oncecall.PaymentIntent, error) {
	row, err := q.q.CapturePaymentIntent(ctx, dbsqlc.CapturePaymentIntentParams{TenantID: tenant, ID: id, CapturedAmount: &amount})
	if err != nil {
		return oncecall.PaymentIntent{}, notFound(err)
	}
	return paymentIntent(row), nil
}

// HoldPaymentIntent holds an uncaptured intent that no other charge holds
// for action, whose remote charge is about to be sent; false otherwise.
func (q queries) HoldPaymentIntent(ctx context.Context, tenant, id, action uuid.UUID) (bool, error) {
	n, err := q.q.HoldPaymentIntent(ctx, dbsqlc.HoldPaymentIntentParams{TenantID: tenant, ID: id, ActionID: &action})
	return n == 1, err
}

// ReleasePaymentIntent ends action's hold on an intent it did not capture.
func (q queries) ReleasePaymentIntent(ctx context.Context, tenant, id, action uuid.UUID) error {
	_, err := q.q.ReleasePaymentIntent(ctx, dbsqlc.ReleasePaymentIntentParams{TenantID: tenant, ID: id, ActionID: &action})
	return err
}

// WithdrawPaymentIntent withdraws an approved, uncaptured intent that no
// other action holds (action may hold it: it is withdrawing it); false when
// it is not such an intent.
func (q queries) WithdrawPaymentIntent(ctx context.Context, tenant, id, action uuid.UUID) (bool, error) {
	n, err := q.q.WithdrawPaymentIntent(ctx, dbsqlc.WithdrawPaymentIntentParams{TenantID: tenant, ID: id, ActionID: &action})
	return n == 1, err
}

// ExpireLapsedHolds marks expired the intents whose holds passed their
// capture deadline uncaptured, and returns how many.
func (s *Store) ExpireLapsedHolds(ctx context.Context) (int, error) {
	n, err := s.q.ExpireLapsedHolds(ctx)
	return int(n), err
}

// CreatePayment records a charge attempt. A second succeeded payment of one
// intent violates payments_one_success_per_intent.
func (q queries) CreatePayment(ctx context.Context, in NewPayment) (oncecall.Payment, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Payment{}, err
	}
	row, err := q.q.CreatePayment(ctx, dbsqlc.CreatePaymentParams{
		ID: id, TenantID: in.TenantID, IntentID: in.IntentID, Amount: in.Amount, Currency: in.Currency,
		Status: in.Status, DeclineCode: ptr(in.DeclineCode), ActionID: in.ActionID, ProviderRef: ptr(in.ProviderRef),
	})
	if err != nil {
		return oncecall.Payment{}, err
	}
	return payment(row), nil
}

// SucceededPayment returns the payment that captured an intent.
func (q queries) SucceededPayment(ctx context.Context, tenant, intent uuid.UUID) (oncecall.Payment, error) {
	row, err := q.q.SucceededPayment(ctx, dbsqlc.SucceededPaymentParams{TenantID: tenant, IntentID: intent})
	if err != nil {
		return oncecall.Payment{}, notFound(err)
	}
	return payment(row), nil
}

// PaymentsByIntent lists an intent's charge attempts, oldest first.
func (q queries) PaymentsByIntent(ctx context.Context, tenant, intent uuid.UUID) ([]oncecall.Payment, error) {
	rows, err := q.q.PaymentsByIntent(ctx, dbsqlc.PaymentsByIntentParams{TenantID: tenant, IntentID: intent})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Payment, len(rows))
	for i, r := range rows {
		out[i] = payment(r)
	}
	return out, nil
}

func paymentIntent(r dbsqlc.PaymentIntent) oncecall.PaymentIntent {
	return oncecall.PaymentIntent{
		ID: r.ID, CustomerID: r.CustomerID, Amount: r.Amount, Currency: r.Currency, Description: r.Description,
		PaymentMethod: r.PaymentMethod, Status: r.Status, CapturedAmount: r.CapturedAmount, CreatedAt: r.CreatedAt.UTC(),
		ChargingAction: deref(r.ChargingActionID),
	}
}

func payment(r dbsqlc.Payment) oncecall.Payment {
	return oncecall.Payment{
		ID: r.ID, PaymentIntentID: r.IntentID, Amount: r.Amount, Currency: r.Currency, Status: r.Status,
		DeclineCode: deref(r.DeclineCode), ProviderRef: deref(r.ProviderRef), CreatedAt: r.CreatedAt.UTC(),
	}
}

// ListOpenPaymentIntents returns a customer's approved intents that are not
// charged yet, newest first, at most limit.
func (q queries) ListOpenPaymentIntents(ctx context.Context, tenant, customer uuid.UUID, limit int) ([]oncecall.PaymentIntent, error) {
	rows, err := q.q.ListOpenPaymentIntents(ctx, dbsqlc.ListOpenPaymentIntentsParams{
		TenantID: tenant, CustomerID: customer, MaxRows: int32(min(limit, 1000)),
	})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.PaymentIntent, len(rows))
	for i, r := range rows {
		out[i] = paymentIntent(r)
	}
	return out, nil
}
