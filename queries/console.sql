-- name: ConsoleQueue :many
-- The operator console's queue (docs/console.md): every action an operator
-- may have to settle, the ones flagged needs_operator and the unfinished
-- ones (running or unknown), oldest first. provider and error keep actions
-- with a step of that provider kind, or whose last error contains the text;
-- created_before keeps those claimed by then (a bulk run acts on what its
-- dry run counted, not on what came later).
SELECT * FROM actions
WHERE (needs_operator OR state <> 'completed')
  AND (sqlc.narg(tenant_id)::uuid IS NULL OR tenant_id = sqlc.narg(tenant_id))
  AND (sqlc.narg(operation)::text IS NULL OR operation = sqlc.narg(operation))
  AND (sqlc.narg(queue_state)::text IS NULL
       OR (sqlc.narg(queue_state) = 'needs_operator' AND needs_operator)
       OR (sqlc.narg(queue_state) <> 'needs_operator' AND NOT needs_operator AND state = sqlc.narg(queue_state)))
  AND created_at <= now() - make_interval(secs => sqlc.arg(min_age_seconds)::float8)
  AND (sqlc.narg(created_before)::timestamptz IS NULL OR created_at <= sqlc.narg(created_before))
  AND (sqlc.narg(provider)::text IS NULL
       OR EXISTS (SELECT 1 FROM action_steps s WHERE s.action_id = actions.id AND s.provider_kind = sqlc.narg(provider)))
  AND (sqlc.narg(error)::text IS NULL
       OR EXISTS (SELECT 1 FROM action_steps s WHERE s.action_id = actions.id
                  AND strpos(lower(s.last_error), lower(sqlc.narg(error))) > 0))
ORDER BY created_at, id
LIMIT sqlc.arg(max_rows);

-- name: ConsoleQueueCounts :many
-- The queue by state, under the same filters but the state: a flagged
-- action counts as needs_operator whatever its state.
SELECT CASE WHEN needs_operator THEN 'needs_operator' ELSE state END::text AS queue_state, count(*) AS n
FROM actions
WHERE (needs_operator OR state <> 'completed')
  AND (sqlc.narg(tenant_id)::uuid IS NULL OR tenant_id = sqlc.narg(tenant_id))
  AND (sqlc.narg(operation)::text IS NULL OR operation = sqlc.narg(operation))
  AND created_at <= now() - make_interval(secs => sqlc.arg(min_age_seconds)::float8)
  AND (sqlc.narg(created_before)::timestamptz IS NULL OR created_at <= sqlc.narg(created_before))
  AND (sqlc.narg(provider)::text IS NULL
       OR EXISTS (SELECT 1 FROM action_steps s WHERE s.action_id = actions.id AND s.provider_kind = sqlc.narg(provider)))
  AND (sqlc.narg(error)::text IS NULL
       OR EXISTS (SELECT 1 FROM action_steps s WHERE s.action_id = actions.id
                  AND strpos(lower(s.last_error), lower(sqlc.narg(error))) > 0))
GROUP BY 1;

-- name: ConsoleTenants :many
SELECT id, name, timezone, locale FROM tenants ORDER BY name, id LIMIT 1000;

-- name: ConsoleTenantIDs :many
-- Every tenant's id: the tenants a search of a person of every tenant reads.
SELECT id FROM tenants;

-- name: SearchActions :many
-- Actions by their search terms (migration 0034: action_search_terms and
-- the GIN index actions_search), in the given tenants, newest first. The
-- terms are looked up first, on their own (MATERIALIZED), and only then
-- filtered by tenant: planned generically, a tenant filter alongside could
-- make the planner read every action of the tenants instead.
WITH hits AS MATERIALIZED (
    SELECT * FROM actions
    WHERE action_search_terms(request, call_id, idempotency_key, resource_id) && sqlc.arg(terms)::text[]
    LIMIT 2000
)
SELECT * FROM hits
WHERE tenant_id = ANY (sqlc.arg(tenant_ids)::uuid[])
ORDER BY created_at DESC, id
LIMIT sqlc.arg(max_rows);

-- name: ActionsOfProviderRef :many
-- The actions whose step holds a provider's reference
-- (action_steps_provider_ref, migration 0026), in the given tenants.
SELECT a.* FROM action_steps s
JOIN actions a ON a.tenant_id = s.tenant_id AND a.id = s.action_id
WHERE s.provider_ref = sqlc.arg(provider_ref)::text AND a.tenant_id = ANY (sqlc.arg(tenant_ids)::uuid[])
ORDER BY a.created_at DESC, a.id
LIMIT 50;

-- name: SearchCustomers :many
-- Customers by id, exact phone number or e-mail address (lower-cased), or
-- the words of their name (words: a to_tsquery of prefixes, "mar:* &
-- lop:*"; empty for none), in the given tenants.
SELECT id, tenant_id, name, phone, email FROM customers
WHERE tenant_id = ANY (sqlc.arg(tenant_ids)::uuid[])
  AND (id = ANY (sqlc.arg(ids)::uuid[])
       OR phone = sqlc.arg(phone)::text
       OR email = sqlc.arg(email)::text
       OR (sqlc.arg(words)::text <> '' AND to_tsvector('simple', name) @@ to_tsquery('simple', sqlc.arg(words)::text)))
ORDER BY name, id
LIMIT 20;

-- name: CustomerLinks :many
-- What a customer's actions name instead of her: her appointments, payment
-- intents and callbacks (their ids), in her tenant.
SELECT id::text AS id FROM appointments WHERE appointments.tenant_id = sqlc.arg(tenant_id) AND appointments.customer_id = sqlc.arg(customer_id)
UNION ALL
SELECT id::text FROM payment_intents WHERE payment_intents.tenant_id = sqlc.arg(tenant_id) AND payment_intents.customer_id = sqlc.arg(customer_id)
UNION ALL
SELECT id::text FROM callbacks WHERE callbacks.tenant_id = sqlc.arg(tenant_id) AND callbacks.customer_id = sqlc.arg(customer_id)
LIMIT 500;

-- name: CallbacksToPhone :many
-- The callbacks to a phone number, in the given tenants: their
-- cancellations name the callback.
SELECT id::text AS id FROM callbacks
WHERE tenant_id = ANY (sqlc.arg(tenant_ids)::uuid[]) AND phone = sqlc.arg(phone)::text
LIMIT 100;
