package db

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// CreateHeldPaymentIntent records an intent whose approval made a hold at
// the payments provider, with the approving action's id as its id; its
// capture deadline is the one the hold step recorded. A second call for the
// same action changes nothing and returns the intent recorded first.
func (t *Tx) CreateHeldPaymentIntent(ctx context.Context, in oncecall.NewHeldIntent) (oncecall.PaymentIntent, error) {
	row, err := t.q.CreateHeldPaymentIntent(ctx, dbsqlc.CreateHeldPaymentIntentParams{
		ActionID: in.ActionID, TenantID: in.TenantID, CustomerID: in.CustomerID, Amount: in.Amount,
		Currency: in.Currency, Description: in.Description, PaymentMethod: in.PaymentMethod,
		HoldRef: &in.HoldRef, HoldAccount: ptr(in.HoldAccount), CreatedAt: in.CreatedAt,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return t.PaymentIntentByID(ctx, in.TenantID, in.ActionID)
	}
	if err != nil {
		return oncecall.PaymentIntent{}, err
	}
	return paymentIntent(row), nil
}

// PaymentIntentHold returns the provider's hold of one of the tenant's
// intents; a zero Hold (Ref "") when the intent was approved without one
// (before holds were made at approval, or on the local provider).
func (q queries) PaymentIntentHold(ctx context.Context, tenant, id uuid.UUID) (oncecall.Hold, error) {
	row, err := q.q.PaymentIntentHold(ctx, dbsqlc.PaymentIntentHoldParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Hold{}, notFound(err)
	}
	h := oncecall.Hold{IntentID: id, TenantID: tenant, Ref: row.HoldRef, Account: row.HoldAccount}
	if row.CaptureBefore != nil {
		h.CaptureBefore = row.CaptureBefore.UTC()
	}
	return h, nil
}

// FlagExpiringHolds flags every uncaptured hold whose capture deadline is
// less than margin away, once: its approving action joins the operator
// queue (needs_operator) with a hold_expiring event in its timeline. It
// returns the holds it flagged.
func (s *Store) FlagExpiringHolds(ctx context.Context, margin time.Duration) ([]oncecall.Hold, error) {
	rows, err := s.q.FlagExpiringHolds(ctx, interval(margin))
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Hold, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Hold{IntentID: r.ID, TenantID: r.TenantID, ActionID: r.ActionID, Ref: r.HoldRef, CaptureBefore: r.CaptureBefore.UTC()}
	}
	return out, nil
}

// stripeAccountPattern is what a Stripe Connect account id looks like.
var stripeAccountPattern = regexp.MustCompile(`^acct_[A-Za-z0-9]{1,64}$`)

// ValidStripeAccount checks a Stripe Connect account id (acct_...).
func ValidStripeAccount(account string) error {
	if !stripeAccountPattern.MatchString(account) {
		return fmt.Errorf("%q is not a Stripe account id (acct_ followed by letters and digits)", account)
	}
	return nil
}

// TenantStripeAccount returns the tenant's Stripe Connect account, "" when
// it has none.
func (q queries) TenantStripeAccount(ctx context.Context, tenant uuid.UUID) (string, error) {
	acct, err := q.q.TenantStripeAccount(ctx, tenant)
	return acct, notFound(err)
}

// SetTenantStripeAccount sets (or, with "", clears) the tenant's Stripe
// Connect account; ErrNotFound when there is no such tenant.
func (s *Store) SetTenantStripeAccount(ctx context.Context, tenant uuid.UUID, account string) error {
	if account != "" {
		if err := ValidStripeAccount(account); err != nil {
			return err
		}
	}
	n, err := s.q.SetTenantStripeAccount(ctx, dbsqlc.SetTenantStripeAccountParams{ID: tenant, StripeAccount: ptr(account)})
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}
