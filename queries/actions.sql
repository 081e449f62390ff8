-- name: ActionByKey :one
SELECT * FROM actions WHERE tenant_id = $1 AND idempotency_key = $2;

-- name: ActionByID :one
SELECT * FROM actions WHERE tenant_id = $1 AND id = $2;

-- name: RetireKey :execrows
-- Frees a completed action's key for a new action: the key was derived from
-- identity fields and the answer stored under it no longer holds. The action
-- keeps its id (and its status URL) under a key no request can derive.
UPDATE actions SET idempotency_key = idempotency_key || '~' || id::text, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND idempotency_key = $3 AND state = 'completed';

-- name: AwaitReplication :one
-- Commits a transaction that holds an xid and one WAL record (a logical
-- message nobody decodes), so under synchronous replication its COMMIT
-- waits until the synchronous standbys have flushed WAL past it, and so
-- past every commit visible before it. Nothing is written, and nothing
-- waited for, when no synchronous standby is configured or this session
-- does not wait for one; waited says which.
SELECT CASE
    WHEN current_setting('synchronous_standby_names') <> ''
        AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply')
    THEN pg_logical_emit_message(true, 'oncecall', '') IS NOT NULL
    ELSE false
END::boolean AS waited;
