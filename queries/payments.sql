-- name: CreatePaymentIntent :one
INSERT INTO payment_intents (id, tenant_id, customer_id, amount, currency, description, payment_method, action_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING *;

-- name: PaymentIntentByID :one
SELECT * FROM payment_intents WHERE tenant_id = $1 AND id = $2;

-- name: LockPaymentIntent :one
-- Charges of one intent take turns: a second charge reads the intent only
-- after the first has committed or rolled back.
SELECT * FROM payment_intents WHERE tenant_id = $1 AND id = $2 FOR UPDATE;

-- name: CapturePaymentIntent :one
UPDATE payment_intents
SET status = 'captured', captured_amount = $3, charging_action_id = NULL, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'requires_capture'
RETURNING *;

-- name: HoldPaymentIntent :execrows
-- Holds an intent for the action charging it through a remote provider:
-- until the provider's outcome is recorded no other charge may start.
UPDATE payment_intents SET charging_action_id = sqlc.arg(action_id), updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'requires_capture' AND charging_action_id IS NULL;

-- name: ReleasePaymentIntent :execrows
-- Ends an action's hold on an intent that it did not capture (the provider
-- declined the charge, or an operator rejected it).
UPDATE payment_intents SET charging_action_id = NULL, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND charging_action_id = sqlc.arg(action_id);

-- name: CreatePayment :one
INSERT INTO payments (id, tenant_id, intent_id, amount, currency, status, decline_code, action_id, provider_ref)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING *;

-- name: SucceededPayment :one
SELECT * FROM payments WHERE tenant_id = $1 AND intent_id = $2 AND status = 'succeeded';

-- name: PaymentsByIntent :many
SELECT * FROM payments WHERE tenant_id = $1 AND intent_id = $2 ORDER BY created_at, id;

-- name: ListOpenPaymentIntents :many
-- A customer's approved intents not charged yet, newest first.
SELECT * FROM payment_intents
WHERE tenant_id = sqlc.arg(tenant_id) AND customer_id = sqlc.arg(customer_id) AND status = 'requires_capture'
ORDER BY created_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: CreateHeldPaymentIntent :one
-- An intent approved with a hold at the payments provider. Its id is the
-- approving action's, so the action's answer names it before it exists. The
-- hold's capture deadline is the one the provider reported with the hold
-- step, or 7 days from the claim (before the hold was made) when none was.
INSERT INTO payment_intents (id, tenant_id, customer_id, amount, currency, description, payment_method, action_id,
                             hold_ref, hold_account, created_at, capture_before)
SELECT sqlc.arg(action_id), sqlc.arg(tenant_id), sqlc.arg(customer_id), sqlc.arg(amount), sqlc.arg(currency),
       sqlc.arg(description), sqlc.arg(payment_method), a.id, sqlc.arg(hold_ref), sqlc.narg(hold_account),
       sqlc.arg(created_at),
       coalesce((SELECT s.provider_until FROM action_steps s WHERE s.action_id = a.id AND s.required),
                a.created_at + interval '7 days')
FROM actions a WHERE a.id = sqlc.arg(action_id)
ON CONFLICT (tenant_id, id) DO NOTHING
RETURNING *;

-- name: PaymentIntentHold :one
-- The provider's hold of an intent approved with one.
SELECT coalesce(hold_ref, '')::text AS hold_ref, coalesce(hold_account, '')::text AS hold_account, capture_before
FROM payment_intents WHERE tenant_id = $1 AND id = $2;

-- name: FlagExpiringHolds :many
-- Holds that are not captured and reach their capture deadline within
-- margin: each is flagged once, its approving action joins the operator
-- queue and its timeline says why, in the same statement.
WITH due AS (
    UPDATE payment_intents SET hold_flagged_at = now(), updated_at = now()
    WHERE hold_ref IS NOT NULL AND status = 'requires_capture' AND hold_flagged_at IS NULL
      AND capture_before < now() + sqlc.arg(margin)::interval
    RETURNING id, tenant_id, action_id, hold_ref, capture_before
), queued AS (
    UPDATE actions a SET needs_operator = true, updated_at = now()
    FROM due WHERE a.id = due.action_id
    RETURNING a.id
), noted AS (
    INSERT INTO action_events (action_id, kind, step, detail)
    SELECT due.action_id, 'hold_expiring', 'payment_holds',
           jsonb_build_object('payment_intent_id', due.id, 'provider_ref', due.hold_ref,
                              'capture_before', due.capture_before)
    FROM due
    RETURNING action_id
)
SELECT due.id, due.tenant_id, due.action_id, due.hold_ref::text AS hold_ref, due.capture_before::timestamptz AS capture_before
FROM due;

-- name: WithdrawPaymentIntent :execrows
-- Withdraws an approved, uncaptured intent: it can no longer be charged.
-- The action withdrawing it holds it while its hold is cancelled at the
-- provider (charging_action_id); one without a hold is withdrawn at once.
UPDATE payment_intents SET status = 'withdrawn', charging_action_id = NULL, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'requires_capture'
  AND (charging_action_id IS NULL OR charging_action_id = sqlc.arg(action_id));

-- name: ExpireLapsedHolds :execrows
-- Holds past their capture deadline, uncaptured and with no charge in
-- flight, were released by the provider: their intents are expired.
UPDATE payment_intents SET status = 'expired', updated_at = now()
WHERE hold_ref IS NOT NULL AND status = 'requires_capture' AND charging_action_id IS NULL
  AND capture_before < now();
