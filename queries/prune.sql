-- Retention. Every statement compares against the caller's clock ($now), so
-- tests control time; each prunes one bounded batch in its own short
-- transaction and skips rows another session holds. Unresolved actions
-- (running, unknown, or waiting for an operator) are never touched.

-- name: PruneResponses :execrows
-- Clears the replayable body and the normalised request (which may hold
-- customer data) of completed actions older than the response retention;
-- the compact action (outcome, resource id, fingerprint) stays.
UPDATE actions SET result = NULL, request = '{}'::jsonb
WHERE id IN (
    SELECT id FROM actions
    WHERE state = 'completed' AND result IS NOT NULL AND NOT needs_operator
      AND completed_at < sqlc.arg(now)::timestamptz - sqlc.arg(retention)::interval
    LIMIT sqlc.arg(batch)
    FOR UPDATE SKIP LOCKED
);

-- name: PruneActions :execrows
-- Deletes completed actions older than the action retention, with their
-- timeline and their steps, once every step is resolved: an action with a
-- step still to finish (a follow-up message) is kept, and the foreign key
-- refuses to drop a step with its action. Business rows keep their action_id.
WITH doomed AS (
    SELECT id FROM actions x
    WHERE x.state = 'completed' AND NOT x.needs_operator
      AND x.completed_at < sqlc.arg(now)::timestamptz - sqlc.arg(retention)::interval
      AND NOT EXISTS (SELECT 1 FROM action_steps s WHERE s.action_id = x.id AND s.state IN ('pending', 'unknown'))
    LIMIT sqlc.arg(batch)
    FOR UPDATE SKIP LOCKED
), steps AS (
    DELETE FROM action_steps WHERE action_id IN (SELECT id FROM doomed)
)
DELETE FROM actions WHERE id IN (SELECT id FROM doomed);

-- name: CountPrunable :one
-- What a prune at $now would do: actions to delete (finished, every step
-- resolved), and bodies to clear of the actions that are kept.
WITH due AS (
    SELECT x.result IS NOT NULL AS has_body,
           x.completed_at < sqlc.arg(now)::timestamptz - sqlc.arg(action_retention)::interval
               AND NOT EXISTS (SELECT 1 FROM action_steps s WHERE s.action_id = x.id AND s.state IN ('pending', 'unknown')) AS deletable,
           x.completed_at < sqlc.arg(now)::timestamptz - sqlc.arg(response_retention)::interval AS body_due
    FROM actions x
    WHERE x.state = 'completed' AND NOT x.needs_operator
      AND x.completed_at < sqlc.arg(now)::timestamptz - least(sqlc.arg(action_retention)::interval, sqlc.arg(response_retention)::interval)
)
SELECT count(*) FILTER (WHERE deletable) AS actions,
       count(*) FILTER (WHERE has_body AND body_due AND NOT deletable) AS responses
FROM due;

-- name: DatabaseNow :one
-- The database's clock: retention is measured against it, not against the
-- clock of whichever process prunes.
SELECT now()::timestamptz;
