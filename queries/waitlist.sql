-- name: JoinWaitlist :one
-- Adds a waitlist entry, or, for a call that already has its entry of the
-- customer, amends that entry: the later service, practitioner, date and
-- note stand, and a cancelled one is active again (migration 0038).
INSERT INTO waitlist_entries (tenant_id, id, customer_id, service_id, practitioner_id, before_date, note,
                              action_id, call_platform, call_id)
VALUES (sqlc.arg(tenant_id), sqlc.arg(id), sqlc.arg(customer_id), sqlc.narg(service_id), sqlc.narg(practitioner_id),
        sqlc.narg(before_date), sqlc.arg(note), sqlc.arg(action_id), sqlc.narg(call_platform), sqlc.narg(call_id))
ON CONFLICT (tenant_id, customer_id, call_platform, call_id) WHERE call_id IS NOT NULL
DO UPDATE SET service_id = EXCLUDED.service_id, practitioner_id = EXCLUDED.practitioner_id,
              before_date = EXCLUDED.before_date, note = EXCLUDED.note, action_id = EXCLUDED.action_id,
              status = 'active', cancelled_at = NULL, amended_at = now()
RETURNING *;

-- name: CancelWaitlistEntry :one
-- Cancels an active entry. No row: the tenant has no such entry, or it is
-- cancelled already.
UPDATE waitlist_entries
SET status = 'cancelled', cancelled_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'active'
RETURNING *;

-- name: WaitlistEntryByID :one
SELECT * FROM waitlist_entries WHERE tenant_id = $1 AND id = $2;

-- name: ListWaitlist :many
-- The tenant's entries, newest first, of a status (NULL: any), after the
-- entry after (NULL: from the newest).
SELECT * FROM waitlist_entries
WHERE tenant_id = sqlc.arg(tenant_id)
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status)::text)
  AND (sqlc.narg(after)::uuid IS NULL OR id < sqlc.narg(after)::uuid)
ORDER BY id DESC
LIMIT sqlc.arg(max);
