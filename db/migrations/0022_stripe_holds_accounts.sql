-- Payments through Stripe: a tenant's connected account, holds made when an
-- intent is approved, and how long a provider keeps a write open.

-- The tenant's Stripe Connect account (acct_...), sent as Stripe-Account on
-- its requests; NULL: the process default (STRIPE_ACCOUNT), if any.
ALTER TABLE tenants ADD COLUMN stripe_account text
    CHECK (stripe_account ~ '^acct_[A-Za-z0-9]{1,64}$');

-- A hold made at approval time: the provider's reference of it (Stripe's
-- PaymentIntent id), the account it was made on, and the instant after which
-- the provider releases it uncaptured. hold_flagged_at is when an operator was
-- told that the hold nears that instant.
ALTER TABLE payment_intents ADD COLUMN hold_ref text;
ALTER TABLE payment_intents ADD COLUMN hold_account text;
ALTER TABLE payment_intents ADD COLUMN capture_before timestamptz;
ALTER TABLE payment_intents ADD COLUMN hold_flagged_at timestamptz;
ALTER TABLE payment_intents ADD CONSTRAINT payment_intents_hold_deadline
    CHECK ((hold_ref IS NULL) = (capture_before IS NULL));
CREATE INDEX payment_intents_open_holds ON payment_intents (capture_before)
    WHERE hold_ref IS NOT NULL AND status = 'requires_capture' AND hold_flagged_at IS NULL;

-- How long the provider keeps a succeeded step's write open (a hold's
-- capture deadline); NULL for writes that do not expire.
ALTER TABLE action_steps ADD COLUMN provider_until timestamptz;
