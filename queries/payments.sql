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
