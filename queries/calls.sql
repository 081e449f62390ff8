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

-- name: RegisterLateResult :execrows
-- Registers the delivery of an action's late result; a second
-- registration of the same action is nothing (one delivery per action).
INSERT INTO late_results (tenant_id, action_id, call_platform, call_id, control_url)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant_id, action_id) DO NOTHING;

-- name: EndLateResults :execrows
-- A call has ended: none of its late results is delivered any more.
UPDATE late_results SET call_ended_at = coalesce(call_ended_at, now())
WHERE tenant_id = $1 AND call_platform = $2 AND call_id = $3;

-- name: LateResultCallEnded :one
SELECT (call_ended_at IS NOT NULL)::boolean AS ended FROM late_results WHERE tenant_id = $1 AND action_id = $2;

-- name: LateResultDelivered :execrows
UPDATE late_results SET delivered_at = now() WHERE tenant_id = $1 AND action_id = $2 AND delivered_at IS NULL;
