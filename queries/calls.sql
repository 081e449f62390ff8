-- name: NudgeCall :many
-- Makes the open steps of a voice call's unfinished actions due now, so the
-- reconciler's next pass looks at them, and notes it in their timelines.
-- updated_at is left alone: nothing new is known about the steps.
WITH due AS (
    UPDATE action_steps s
    SET next_check_at = now()
    FROM actions a
    WHERE a.tenant_id = sqlc.arg(tenant_id) AND a.call_id = sqlc.arg(call_id) AND a.call_platform = sqlc.arg(call_platform)
      AND a.state <> 'completed'
      AND s.action_id = a.id AND s.state IN ('pending', 'unknown') AND s.next_check_at > now()
    RETURNING s.action_id, s.name
)
INSERT INTO action_events (action_id, kind, step, detail)
SELECT action_id, 'nudged', name, jsonb_build_object('by', sqlc.arg(event)::text) FROM due
RETURNING action_id;

-- name: SubscribeLate :one
-- A call that heard pending for an action subscribes to its late result:
-- one row per action and call, so asking again adds nothing. The action is
-- read FOR SHARE, which a settlement's UPDATE waits for: a settlement that
-- committed before this statement is seen here (settled: the caller queues
-- the delivery in this transaction), one that commits after it sees this
-- row (it queues the delivery). Another tenant's action is no row, so
-- nothing subscribes to it.
WITH target AS (
    SELECT tenant_id, id, state FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.id = sqlc.arg(action_id)
    FOR SHARE
), added AS (
    INSERT INTO late_results (tenant_id, action_id, call_platform, call_id, control_url, tool)
    SELECT target.tenant_id, target.id, sqlc.arg(call_platform), sqlc.arg(call_id), sqlc.arg(control_url), sqlc.arg(tool)
    FROM target
    ON CONFLICT (tenant_id, action_id, call_platform, call_id) DO NOTHING
    RETURNING late_results.call_id
)
SELECT (target.state = 'completed')::boolean AS settled, EXISTS (SELECT 1 FROM added)::boolean AS fresh FROM target;

-- name: LateSubscribers :many
-- The calls still live that wait for an action's late result.
SELECT call_platform, call_id FROM late_results
WHERE tenant_id = $1 AND action_id = $2 AND call_ended_at IS NULL AND delivered_at IS NULL
ORDER BY call_platform, call_id;

-- name: LateSubscriber :one
SELECT * FROM late_results
WHERE tenant_id = $1 AND action_id = $2 AND call_platform = $3 AND call_id = $4;

-- name: EndLateResults :execrows
-- A call has ended: none of its late results is delivered any more.
UPDATE late_results SET call_ended_at = coalesce(call_ended_at, now())
WHERE tenant_id = $1 AND call_platform = $2 AND call_id = $3;

-- name: LateDelivered :execrows
UPDATE late_results SET delivered_at = now()
WHERE tenant_id = $1 AND action_id = $2 AND call_platform = $3 AND call_id = $4 AND delivered_at IS NULL;
