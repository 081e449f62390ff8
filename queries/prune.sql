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
-- steps and timeline (ON DELETE CASCADE). Business rows keep their action_id.
DELETE FROM actions
WHERE id IN (
    SELECT id FROM actions
    WHERE state = 'completed' AND NOT needs_operator
      AND completed_at < sqlc.arg(now)::timestamptz - sqlc.arg(retention)::interval
    LIMIT sqlc.arg(batch)
    FOR UPDATE SKIP LOCKED
);

-- name: CountPrunable :one
-- What a prune at $now would do: actions to delete, and bodies to clear of
-- the actions that are kept.
SELECT
    count(*) FILTER (WHERE completed_at < sqlc.arg(now)::timestamptz - sqlc.arg(action_retention)::interval) AS actions,
    count(*) FILTER (WHERE result IS NOT NULL
        AND completed_at < sqlc.arg(now)::timestamptz - sqlc.arg(response_retention)::interval
        AND completed_at >= sqlc.arg(now)::timestamptz - sqlc.arg(action_retention)::interval) AS responses
FROM actions
WHERE state = 'completed' AND NOT needs_operator
  AND completed_at < sqlc.arg(now)::timestamptz - least(sqlc.arg(action_retention)::interval, sqlc.arg(response_retention)::interval);
