-- name: RequestCallback :one
-- Records a callback, or, for a call that already has its callback of the
-- subject under this callback_ref, amends that callback: the later reason,
-- window and contact stand, and a cancelled one is requested again
-- (migration 0020).
INSERT INTO callbacks (id, tenant_id, customer_id, phone, subject, window_start, window_end, timezone, reason,
                       action_id, call_id, call_platform, callback_ref)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.narg(customer_id), sqlc.narg(phone), sqlc.arg(subject),
        sqlc.arg(window_start), sqlc.arg(window_end), sqlc.arg(timezone), sqlc.arg(reason),
        sqlc.arg(action_id), sqlc.narg(call_id), sqlc.narg(call_platform), sqlc.arg(callback_ref))
ON CONFLICT (tenant_id, subject, call_platform, call_id, callback_ref) WHERE call_id IS NOT NULL
DO UPDATE SET customer_id = EXCLUDED.customer_id, phone = EXCLUDED.phone, window_start = EXCLUDED.window_start,
              window_end = EXCLUDED.window_end, timezone = EXCLUDED.timezone, reason = EXCLUDED.reason,
              action_id = EXCLUDED.action_id, status = 'requested', cancelled_at = NULL, amended_at = now()
RETURNING *;

-- name: CancelCallback :one
-- Cancels a requested callback. No row: the tenant has no such callback,
-- or it is cancelled already.
UPDATE callbacks
SET status = 'cancelled', cancelled_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'requested'
RETURNING *;

-- name: CallbackByID :one
SELECT * FROM callbacks WHERE tenant_id = $1 AND id = $2;

-- name: CallbacksOfCustomer :many
-- A customer's callbacks, requested and cancelled, by window.
SELECT * FROM callbacks WHERE tenant_id = $1 AND customer_id = $2
ORDER BY window_start, id
LIMIT $3;

-- name: CallbacksOfPhone :many
-- The callbacks to a phone number, by window.
SELECT * FROM callbacks WHERE tenant_id = $1 AND phone = $2
ORDER BY window_start, id
LIMIT $3;
