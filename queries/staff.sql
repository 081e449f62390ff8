-- Named staff of the operator console (migration 0033, docs/console.md).

-- name: CreateOperator :one
INSERT INTO operators (id, name, email, role, tenant_id, password_hash)
VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(email), sqlc.arg(role), sqlc.narg(tenant_id), sqlc.narg(password_hash))
RETURNING *;

-- name: OperatorByEmail :one
SELECT * FROM operators WHERE email = sqlc.arg(email);

-- name: OperatorByID :one
SELECT * FROM operators WHERE id = sqlc.arg(id);

-- name: ListOperators :many
SELECT * FROM operators ORDER BY disabled_at IS NOT NULL, name, id LIMIT 1000;

-- name: SetOperatorPassword :execrows
UPDATE operators SET password_hash = sqlc.arg(password_hash) WHERE id = sqlc.arg(id) AND disabled_at IS NULL;

-- name: DisableOperator :execrows
UPDATE operators SET disabled_at = now() WHERE id = sqlc.arg(id) AND disabled_at IS NULL;

-- name: CreateOperatorLink :exec
INSERT INTO operator_links (token_hash, operator_id, expires_at)
VALUES (sqlc.arg(token_hash), sqlc.arg(operator_id), now() + sqlc.arg(ttl)::interval);

-- name: UseOperatorLink :one
-- Spends a one-time sign-in link: only once, only before it expires, only
-- for a person still enabled.
UPDATE operator_links l SET used_at = now()
FROM operators o
WHERE l.token_hash = sqlc.arg(token_hash) AND l.used_at IS NULL AND l.expires_at > now()
  AND o.id = l.operator_id AND o.disabled_at IS NULL
RETURNING l.operator_id;

-- name: OperatorLinkValid :one
SELECT EXISTS (
    SELECT 1 FROM operator_links l JOIN operators o ON o.id = l.operator_id
    WHERE l.token_hash = sqlc.arg(token_hash) AND l.used_at IS NULL AND l.expires_at > now() AND o.disabled_at IS NULL
);

-- name: CreateOperatorSession :one
INSERT INTO operator_sessions (token_hash, id, operator_id, name, via, expires_at)
VALUES (sqlc.arg(token_hash), sqlc.arg(id), sqlc.narg(operator_id), sqlc.arg(name), sqlc.arg(via), now() + sqlc.arg(ttl)::interval)
RETURNING expires_at;

-- name: OperatorSession :one
-- A session still valid, with its person as they are now: a changed role
-- or tenant applies at the next request, a disabled person has none.
SELECT s.id, s.operator_id, s.name, s.via, s.expires_at,
       o.email AS email, o.role AS role, o.tenant_id AS operator_tenant_id
FROM operator_sessions s
LEFT JOIN operators o ON o.id = s.operator_id
WHERE s.token_hash = sqlc.arg(token_hash) AND s.revoked_at IS NULL AND s.expires_at > now()
  AND (s.operator_id IS NULL OR o.disabled_at IS NULL);

-- name: RevokeOperatorSession :execrows
UPDATE operator_sessions SET revoked_at = now() WHERE token_hash = sqlc.arg(token_hash) AND revoked_at IS NULL;

-- name: RevokeSessionsOf :execrows
-- Ends every open session of a person.
UPDATE operator_sessions SET revoked_at = now()
WHERE operator_id = sqlc.arg(operator_id) AND revoked_at IS NULL AND expires_at > now();

-- name: OpenSessionCounts :many
SELECT operator_id, count(*) AS n FROM operator_sessions
WHERE operator_id IS NOT NULL AND revoked_at IS NULL AND expires_at > now()
GROUP BY operator_id;

-- name: AddAudit :exec
INSERT INTO operator_audit (operator_id, operator_name, via, tenant_id, action_id, kind, detail)
VALUES (sqlc.narg(operator_id), sqlc.arg(operator_name), sqlc.arg(via), sqlc.narg(tenant_id), sqlc.narg(action_id),
        sqlc.arg(kind), sqlc.arg(detail));

-- name: ListAudit :many
-- The audit trail, newest first, under the page's filters; before_id pages
-- back.
SELECT * FROM operator_audit
WHERE (sqlc.narg(tenant_id)::uuid IS NULL OR tenant_id = sqlc.narg(tenant_id))
  AND (sqlc.narg(action_id)::uuid IS NULL OR action_id = sqlc.narg(action_id))
  AND (sqlc.narg(operator_id)::uuid IS NULL OR operator_id = sqlc.narg(operator_id))
  AND (sqlc.narg(operator_name)::text IS NULL OR operator_name = sqlc.narg(operator_name))
  AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind))
  AND (sqlc.narg(since)::timestamptz IS NULL OR at >= sqlc.narg(since))
  AND (sqlc.narg(until)::timestamptz IS NULL OR at < sqlc.narg(until))
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id))
ORDER BY id DESC
LIMIT sqlc.arg(max_rows);

-- name: MarkFollowUpDone :execrows
INSERT INTO follow_ups_done (tenant_id, kind, subject_id, operator_id, operator_name, via, note)
VALUES (sqlc.arg(tenant_id), sqlc.arg(kind), sqlc.arg(subject_id), sqlc.narg(operator_id), sqlc.arg(operator_name),
        sqlc.arg(via), sqlc.arg(note))
ON CONFLICT DO NOTHING;

-- name: FollowUpsDone :many
SELECT * FROM follow_ups_done
WHERE tenant_id = ANY (sqlc.arg(tenant_ids)::uuid[]) AND subject_id = ANY (sqlc.arg(subject_ids)::uuid[]);

-- name: OpenCallbacks :many
-- Callbacks still requested whose window ended at most since ago, in the
-- given tenants, soonest first, with the customer to call; the caller
-- leaves out those marked done.
SELECT c.id, c.tenant_id, c.customer_id, c.phone, c.window_start, c.window_end, c.timezone, c.reason, c.action_id,
       cu.name AS customer_name, cu.phone AS customer_phone
FROM callbacks c
LEFT JOIN customers cu ON cu.tenant_id = c.tenant_id AND cu.id = c.customer_id
WHERE c.tenant_id = ANY (sqlc.arg(tenant_ids)::uuid[]) AND c.status = 'requested'
  AND c.window_end >= now() - sqlc.arg(since)::interval
  AND NOT EXISTS (SELECT 1 FROM follow_ups_done f
                  WHERE f.tenant_id = c.tenant_id AND f.kind = 'callback' AND f.subject_id = c.id)
ORDER BY c.window_start, c.id
LIMIT 200;

-- name: RecentFollowUpsDone :many
SELECT * FROM follow_ups_done
WHERE tenant_id = ANY (sqlc.arg(tenant_ids)::uuid[]) AND done_at >= now() - sqlc.arg(since)::interval
ORDER BY done_at DESC
LIMIT 100;

-- name: CallbackTenant :one
-- The tenant of a callback, for the console's tasks (callbacks' primary key).
SELECT tenant_id FROM callbacks WHERE id = sqlc.arg(id);
