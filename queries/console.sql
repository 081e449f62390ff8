-- name: ConsoleQueue :many
-- The operator console's queue (docs/console.md): every action an operator
-- may have to settle, the ones flagged needs_operator and the unfinished
-- ones (running or unknown), oldest first.
SELECT * FROM actions
WHERE (needs_operator OR state <> 'completed')
  AND (sqlc.narg(tenant_id)::uuid IS NULL OR tenant_id = sqlc.narg(tenant_id))
  AND (sqlc.narg(operation)::text IS NULL OR operation = sqlc.narg(operation))
  AND (sqlc.narg(queue_state)::text IS NULL
       OR (sqlc.narg(queue_state) = 'needs_operator' AND needs_operator)
       OR (sqlc.narg(queue_state) <> 'needs_operator' AND NOT needs_operator AND state = sqlc.narg(queue_state)))
  AND created_at <= now() - make_interval(secs => sqlc.arg(min_age_seconds)::float8)
ORDER BY created_at, id
LIMIT sqlc.arg(max_rows);

-- name: ConsoleQueueCounts :many
-- The queue by state, under the same tenant, operation and age filters: a
-- flagged action counts as needs_operator whatever its state.
SELECT CASE WHEN needs_operator THEN 'needs_operator' ELSE state END::text AS queue_state, count(*) AS n
FROM actions
WHERE (needs_operator OR state <> 'completed')
  AND (sqlc.narg(tenant_id)::uuid IS NULL OR tenant_id = sqlc.narg(tenant_id))
  AND (sqlc.narg(operation)::text IS NULL OR operation = sqlc.narg(operation))
  AND created_at <= now() - make_interval(secs => sqlc.arg(min_age_seconds)::float8)
GROUP BY 1;

-- name: ConsoleTenants :many
SELECT id, name FROM tenants ORDER BY name, id LIMIT 1000;

-- name: ConsoleActionsByKey :many
-- An idempotency key as the caller sent it (also after its action retired
-- it: key~action_id), or its hash as the logs print it (key_hash: the first
-- 12 hex digits of its SHA-256).
SELECT * FROM actions
WHERE idempotency_key = sqlc.arg(key)::text
   OR left(idempotency_key, length(sqlc.arg(key)::text) + 1) = sqlc.arg(key)::text || '~'
   OR (length(sqlc.arg(key)::text) = 12
       AND left(encode(sha256(convert_to(idempotency_key, 'UTF8')), 'hex'), 12) = lower(sqlc.arg(key)::text))
ORDER BY created_at DESC
LIMIT 50;

-- name: ConsoleActionsByCall :many
-- A voice call's id, of any platform, or one platform's call written
-- <platform>:<id> as the console shows it.
SELECT * FROM actions
WHERE call_id = sqlc.arg(call)::text OR call_platform || ':' || call_id = sqlc.arg(call)::text
ORDER BY created_at DESC
LIMIT 50;

-- name: ConsoleCustomers :many
-- Customers matching an id, a phone number or e-mail address exactly, or a
-- part of the name. Only what a result list may show: no phone or e-mail.
SELECT id, tenant_id, name FROM customers
WHERE id::text = lower(sqlc.arg(q)::text)
   OR phone = sqlc.arg(q)::text
   OR lower(email) = lower(sqlc.arg(q)::text)
   OR (length(sqlc.arg(q)::text) >= 2 AND name ILIKE '%' || replace(replace(replace(sqlc.arg(q)::text, '\', '\\'), '%', '\%'), '_', '\_') || '%')
ORDER BY name, id
LIMIT 20;

-- name: ConsoleActionsOfCustomers :many
SELECT * FROM actions
WHERE request->>'customer_id' = ANY (sqlc.arg(customer_ids)::text[])
ORDER BY created_at DESC
LIMIT 50;
