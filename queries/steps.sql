-- name: InsertStep :exec
INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key, external_ref, payload)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: StepsOfAction :many
SELECT * FROM action_steps WHERE action_id = $1 ORDER BY seq;

-- name: RecordStep :exec
-- Records what an attempt or a check learned about a step.
UPDATE action_steps
SET state = sqlc.arg(state), provider_ref = sqlc.narg(provider_ref), reject_code = sqlc.narg(reject_code),
    attempts = attempts + sqlc.arg(sent)::integer, checks = sqlc.arg(checks),
    last_error = sqlc.narg(last_error),
    last_sent_at = CASE WHEN sqlc.arg(sent)::integer > 0 THEN now() ELSE last_sent_at END,
    next_check_at = sqlc.arg(next_check_at), updated_at = now()
WHERE action_id = sqlc.arg(action_id) AND name = sqlc.arg(name);

-- name: AddEvent :exec
INSERT INTO action_events (action_id, kind, step, detail) VALUES ($1, $2, $3, $4);

-- name: EventsOfAction :many
SELECT * FROM action_events WHERE action_id = $1 ORDER BY id;

-- name: MarkActionUnknown :exec
UPDATE actions SET state = 'unknown', lease_until = NULL, updated_at = now()
WHERE id = $1 AND state = 'running';

-- name: SetNeedsOperator :exec
UPDATE actions SET needs_operator = true, lease_until = NULL, updated_at = now() WHERE id = $1;

-- name: ReleaseAction :exec
UPDATE actions SET lease_until = NULL WHERE id = $1 AND state <> 'running';

-- name: LeaseAbandoned :many
-- Running actions whose worker's lease expired: possibly executed. Their
-- pending steps become unknown (see AbandonSteps). SKIP LOCKED and the new
-- lease keep two reconcilers off the same action.
UPDATE actions a SET lease_until = now() + sqlc.arg(lease)::interval, updated_at = now()
WHERE a.id IN (
    SELECT id FROM actions
    WHERE state = 'running' AND lease_until < now()
    ORDER BY lease_until
    LIMIT sqlc.arg(max_rows)
    FOR UPDATE SKIP LOCKED
)
RETURNING a.id, a.tenant_id;

-- name: AbandonSteps :exec
-- A crashed worker may have sent any pending step: treat them as unknown,
-- sent at the latest when the worker's lease ran out.
UPDATE action_steps
SET state = 'unknown', last_sent_at = greatest(coalesce(last_sent_at, sqlc.arg(sent_by)), sqlc.arg(sent_by)), updated_at = now()
WHERE action_id = sqlc.arg(action_id) AND state = 'pending';

-- name: LeaseDue :many
-- Actions with a step due for an attempt or a check, not leased by another
-- reconciler and not waiting for an operator.
UPDATE actions a SET lease_until = now() + sqlc.arg(lease)::interval, updated_at = now()
WHERE a.id IN (
    SELECT x.id FROM actions x
    WHERE NOT x.needs_operator
      AND (x.lease_until IS NULL OR x.lease_until < now())
      AND x.state <> 'running'
      AND EXISTS (SELECT 1 FROM action_steps s
                  WHERE s.action_id = x.id AND s.state IN ('pending', 'unknown') AND s.next_check_at <= now())
    LIMIT sqlc.arg(max_rows)
    FOR UPDATE SKIP LOCKED
)
RETURNING a.id, a.tenant_id;

-- name: ListActions :many
SELECT * FROM actions
WHERE (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (NOT sqlc.arg(only_needs_operator)::boolean OR needs_operator)
ORDER BY created_at DESC
LIMIT sqlc.arg(max_rows);

-- name: ActionByIDAnyTenant :one
SELECT * FROM actions WHERE id = $1;

-- name: ResolveAction :exec
UPDATE actions
SET state = 'completed', outcome = $2, reason = $3, http_status = $4, resource_id = $5, result = $6,
    needs_operator = false, lease_until = NULL, updated_at = now(), completed_at = now()
WHERE id = $1 AND state <> 'completed';
