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
