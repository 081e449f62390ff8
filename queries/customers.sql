-- name: CreateCustomer :one
INSERT INTO customers (id, tenant_id, name, phone, email, external_ref)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: CustomerByID :one
SELECT * FROM customers WHERE tenant_id = $1 AND id = $2;

-- name: CustomerExists :one
SELECT EXISTS (SELECT 1 FROM customers WHERE tenant_id = $1 AND id = $2);

-- name: CustomerByExternalRef :one
SELECT * FROM customers WHERE tenant_id = $1 AND external_ref = $2;

-- name: CustomerByPhone :one
SELECT * FROM customers WHERE tenant_id = $1 AND phone = $2;

-- name: UpdateCustomer :one
-- Sets the fields whose set_ flag is true; a NULL value clears a field.
UPDATE customers
SET name         = CASE WHEN sqlc.arg(set_name)::boolean THEN sqlc.arg(name)::text ELSE name END,
    phone        = CASE WHEN sqlc.arg(set_phone)::boolean THEN sqlc.narg(phone)::text ELSE phone END,
    email        = CASE WHEN sqlc.arg(set_email)::boolean THEN sqlc.narg(email)::text ELSE email END,
    external_ref = CASE WHEN sqlc.arg(set_external_ref)::boolean THEN sqlc.narg(external_ref)::text ELSE external_ref END,
    updated_at   = now()
WHERE tenant_id = sqlc.arg(tenant_id) AND id = sqlc.arg(id)
RETURNING *;

-- name: AddPoints :one
-- Changes the balance in one statement that cannot take it below zero, and
-- records the change with the balance it produced. No row: the customer is
-- missing or the balance is too small.
WITH c AS (
    UPDATE customers
    SET points = points + sqlc.arg(delta), updated_at = now()
    WHERE customers.tenant_id = sqlc.arg(tenant_id) AND customers.id = sqlc.arg(customer_id)
      AND points + sqlc.arg(delta) >= 0
    RETURNING customers.id, customers.points
)
INSERT INTO points_ledger (id, tenant_id, customer_id, delta, reason, balance_after, action_id)
SELECT sqlc.arg(id), sqlc.arg(tenant_id), c.id, sqlc.arg(delta), sqlc.arg(reason), c.points, sqlc.arg(action_id)
FROM c
RETURNING *;

-- name: ClaimAndCreateCustomer :one
-- A customer's creation in one round trip, as ClaimAndBook: when the key is
-- not taken, it creates the customer unless another of the tenant's
-- customers already has the phone (first) or the external reference, and
-- inserts the action already completed: confirmed with the customer, or
-- rejected with CUSTOMER_EXISTS naming that customer and the field. A
-- concurrent create of the same phone or reference makes the unique index
-- fail; the idempotency core then runs the statement again, which sees it.
-- Empty optional fields are stored as NULL and left out of the answer.
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), held AS (
    SELECT h.id, h.field FROM (
        SELECT customers.id, 'phone' AS field, 1 AS rank FROM customers
        WHERE sqlc.arg(phone)::text <> '' AND customers.tenant_id = sqlc.arg(tenant_id) AND customers.phone = sqlc.arg(phone)::text
        UNION ALL
        SELECT customers.id, 'external_ref', 2 FROM customers
        WHERE sqlc.arg(external_ref)::text <> '' AND customers.tenant_id = sqlc.arg(tenant_id)
          AND customers.external_ref = sqlc.arg(external_ref)::text
    ) AS h
    WHERE (SELECT yes FROM fresh)
    ORDER BY h.rank
    LIMIT 1
), created AS (
    INSERT INTO customers (id, tenant_id, name, phone, email, external_ref)
    SELECT sqlc.arg(customer_id), sqlc.arg(tenant_id), sqlc.arg(name), NULLIF(sqlc.arg(phone)::text, ''),
           NULLIF(sqlc.arg(email)::text, ''), NULLIF(sqlc.arg(external_ref)::text, '')
    WHERE (SELECT yes FROM fresh) AND NOT EXISTS (SELECT 1 FROM held)
    RETURNING customers.id, customers.name, customers.phone, customers.email, customers.external_ref,
              customers.points, customers.created_at
), answer AS (
    SELECT CASE WHEN c.id IS NULL THEN 'rejected' ELSE 'confirmed' END AS outcome,
           CASE WHEN c.id IS NULL THEN 'CUSTOMER_EXISTS' END AS reason,
           CASE WHEN c.id IS NULL THEN 422 ELSE 201 END AS http_status,
           c.id::text AS resource_id,
           CASE WHEN c.id IS NOT NULL THEN
                    '{"id":' || to_json(c.id) || ',"name":' || to_json(c.name) ||
                    COALESCE(',"phone":' || to_json(NULLIF(c.phone, '')), '') ||
                    COALESCE(',"email":' || to_json(NULLIF(c.email, '')), '') ||
                    COALESCE(',"external_ref":' || to_json(NULLIF(c.external_ref, '')), '') ||
                    ',"points":' || c.points || ',"created_at":' || to_json(rtrim(rtrim(to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                ELSE (SELECT '{"customer_id":' || to_json(held.id) || ',"field":' || to_json(held.field) || '}' FROM held)
           END AS body
    FROM fresh
    LEFT JOIN created c ON true
    WHERE fresh.yes
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;

-- name: ClaimAndUpdateCustomer :one
-- A customer's change in one round trip, as ClaimAndBook: when the key is
-- not taken, it sets the fields whose set_ flag is true (an empty phone,
-- e-mail or reference clears it) unless another of the tenant's customers
-- already has the new phone (first) or reference, and inserts the action
-- already completed: confirmed with the customer, or rejected with
-- CUSTOMER_NOT_FOUND or CUSTOMER_EXISTS naming the other customer and the
-- field. A concurrent change to the same phone or reference makes the unique
-- index fail; the idempotency core then runs the statement again.
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), held AS (
    SELECT h.id, h.field FROM (
        SELECT customers.id, 'phone' AS field, 1 AS rank FROM customers
        WHERE sqlc.arg(phone)::text <> '' AND customers.tenant_id = sqlc.arg(tenant_id)
          AND customers.phone = sqlc.arg(phone)::text AND customers.id <> sqlc.arg(customer_id)::uuid
        UNION ALL
        SELECT customers.id, 'external_ref', 2 FROM customers
        WHERE sqlc.arg(external_ref)::text <> '' AND customers.tenant_id = sqlc.arg(tenant_id)
          AND customers.external_ref = sqlc.arg(external_ref)::text AND customers.id <> sqlc.arg(customer_id)::uuid
    ) AS h
    WHERE (SELECT yes FROM fresh)
    ORDER BY h.rank
    LIMIT 1
), changed AS (
    UPDATE customers
    SET name         = CASE WHEN sqlc.arg(set_name)::boolean THEN sqlc.arg(name)::text ELSE customers.name END,
        phone        = CASE WHEN sqlc.arg(set_phone)::boolean THEN NULLIF(sqlc.arg(phone)::text, '') ELSE customers.phone END,
        email        = CASE WHEN sqlc.arg(set_email)::boolean THEN NULLIF(sqlc.arg(email)::text, '') ELSE customers.email END,
        external_ref = CASE WHEN sqlc.arg(set_external_ref)::boolean THEN NULLIF(sqlc.arg(external_ref)::text, '')
                            ELSE customers.external_ref END,
        updated_at   = now()
    WHERE (SELECT yes FROM fresh) AND NOT EXISTS (SELECT 1 FROM held)
      AND customers.tenant_id = sqlc.arg(tenant_id) AND customers.id = sqlc.arg(customer_id)::uuid
    RETURNING customers.id, customers.name, customers.phone, customers.email, customers.external_ref,
              customers.points, customers.created_at
), answer AS (
    SELECT CASE WHEN c.id IS NULL THEN 'rejected' ELSE 'confirmed' END AS outcome,
           r.reason,
           CASE WHEN c.id IS NULL THEN 422 ELSE 200 END AS http_status,
           c.id::text AS resource_id,
           CASE WHEN c.id IS NOT NULL THEN
                    '{"id":' || to_json(c.id) || ',"name":' || to_json(c.name) ||
                    COALESCE(',"phone":' || to_json(NULLIF(c.phone, '')), '') ||
                    COALESCE(',"email":' || to_json(NULLIF(c.email, '')), '') ||
                    COALESCE(',"external_ref":' || to_json(NULLIF(c.external_ref, '')), '') ||
                    ',"points":' || c.points || ',"created_at":' || to_json(rtrim(rtrim(to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                WHEN r.reason = 'CUSTOMER_NOT_FOUND' THEN '{"customer_id":' || to_json(sqlc.arg(customer_id)::uuid) || '}'
                ELSE (SELECT '{"customer_id":' || to_json(held.id) || ',"field":' || to_json(held.field) || '}' FROM held)
           END AS body
    FROM fresh
    LEFT JOIN changed c ON true
    CROSS JOIN LATERAL (
        SELECT CASE WHEN c.id IS NOT NULL THEN NULL
                    WHEN NOT EXISTS (SELECT 1 FROM customers cu WHERE cu.tenant_id = sqlc.arg(tenant_id) AND cu.id = sqlc.arg(customer_id)::uuid)
                        THEN 'CUSTOMER_NOT_FOUND'
                    ELSE 'CUSTOMER_EXISTS' END AS reason
    ) AS r
    WHERE fresh.yes
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;

-- name: ClaimAndAppendNote :one
-- A note's one round trip, as ClaimAndBook: when the key is not taken, it
-- appends the note to the tenant's customer and inserts the action already
-- completed: confirmed with the note (the call's note under note_ref, amended,
-- when the call has one), or rejected with
-- CUSTOMER_NOT_FOUND.
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), noted AS (
    INSERT INTO customer_notes (id, tenant_id, customer_id, text, action_id, call_id, call_platform, note_ref)
    SELECT sqlc.arg(note_id), sqlc.arg(tenant_id), customers.id, sqlc.arg(text), sqlc.arg(id),
           sqlc.narg(call_id), sqlc.narg(call_platform), sqlc.arg(note_ref)
    FROM customers
    WHERE (SELECT yes FROM fresh)
      AND customers.tenant_id = sqlc.arg(tenant_id) AND customers.id = sqlc.arg(customer_id)
    ON CONFLICT (tenant_id, customer_id, call_platform, call_id, note_ref) WHERE call_id IS NOT NULL
    DO UPDATE SET text = EXCLUDED.text, amended_at = now()
    RETURNING customer_notes.id, customer_notes.customer_id, customer_notes.text, customer_notes.created_at
), answer AS (
    SELECT CASE WHEN n.id IS NULL THEN 'rejected' ELSE 'confirmed' END AS outcome,
           CASE WHEN n.id IS NULL THEN 'CUSTOMER_NOT_FOUND' END AS reason,
           CASE WHEN n.id IS NULL THEN 422 ELSE 201 END AS http_status,
           n.id::text AS resource_id,
           CASE WHEN n.id IS NOT NULL THEN
                    '{"id":' || to_json(n.id) || ',"customer_id":' || to_json(n.customer_id) ||
                    ',"text":' || to_json(n.text) || ',"created_at":' || to_json(rtrim(rtrim(to_char(n.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                ELSE '{"customer_id":' || to_json(sqlc.arg(customer_id)::uuid) || '}' END AS body
    FROM fresh
    LEFT JOIN noted n ON true
    WHERE fresh.yes
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;

-- name: ClaimAndAddPoints :one
-- A points change's one round trip, as ClaimAndBook: when the key is not
-- taken, it changes the balance unless it would go below zero and inserts
-- the action already completed: confirmed with the ledger entry, or
-- rejected with CUSTOMER_NOT_FOUND or INSUFFICIENT_POINTS (with the balance
-- as it is: read with a share lock, so a change another transaction
-- committed during this statement is seen).
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), changed AS (
    UPDATE customers
    SET points = customers.points + sqlc.arg(delta), updated_at = now()
    WHERE (SELECT yes FROM fresh)
      AND customers.tenant_id = sqlc.arg(tenant_id) AND customers.id = sqlc.arg(customer_id)
      AND customers.points + sqlc.arg(delta) >= 0
    RETURNING customers.id, customers.points
), entry AS (
    INSERT INTO points_ledger (id, tenant_id, customer_id, delta, reason, balance_after, action_id)
    SELECT sqlc.arg(entry_id), sqlc.arg(tenant_id), changed.id, sqlc.arg(delta), sqlc.arg(reason), changed.points, sqlc.arg(id)
    FROM changed
    RETURNING points_ledger.id, points_ledger.customer_id, points_ledger.delta, points_ledger.reason,
              points_ledger.balance_after, points_ledger.created_at
), answer AS (
    SELECT CASE WHEN e.id IS NULL THEN 'rejected' ELSE 'confirmed' END AS outcome,
           CASE WHEN e.id IS NOT NULL THEN NULL WHEN cu.id IS NULL THEN 'CUSTOMER_NOT_FOUND' ELSE 'INSUFFICIENT_POINTS' END AS reason,
           CASE WHEN e.id IS NULL THEN 422 ELSE 201 END AS http_status,
           e.id::text AS resource_id,
           CASE WHEN e.id IS NOT NULL THEN
                    '{"id":' || to_json(e.id) || ',"customer_id":' || to_json(e.customer_id) || ',"delta":' || e.delta ||
                    ',"reason":' || to_json(e.reason) || ',"balance":' || e.balance_after ||
                    ',"created_at":' || to_json(rtrim(rtrim(to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                WHEN cu.id IS NULL THEN '{"customer_id":' || to_json(sqlc.arg(customer_id)::uuid) || '}'
                ELSE '{"balance":' || cu.points || ',"customer_id":' || to_json(sqlc.arg(customer_id)::uuid) ||
                     ',"delta":' || sqlc.arg(delta)::bigint || '}' END AS body
    FROM fresh
    LEFT JOIN entry e ON true
    LEFT JOIN LATERAL (
        SELECT customers.id, customers.points FROM customers
        WHERE e.id IS NULL AND customers.tenant_id = sqlc.arg(tenant_id) AND customers.id = sqlc.arg(customer_id)
        FOR SHARE
    ) AS cu ON true
    WHERE fresh.yes
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;
