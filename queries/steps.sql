-- name: InsertStep :exec
INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key, external_ref, payload,
                          provider_kind, provider_account)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- name: StepsOfAction :many
-- An action's steps with the database's clock and the action's claim time:
-- a driver takes every time decision against the database's now(), never
-- against the clock of its own process.
SELECT s.*, a.created_at AS action_created_at, now()::timestamptz AS db_now
FROM action_steps s JOIN actions a ON a.tenant_id = s.tenant_id AND a.id = s.action_id
WHERE s.action_id = $1
ORDER BY s.seq;

-- name: BeginSend :execrows
-- Marks a step as possibly sent from now on, just before it is sent, if at
-- this instant the sender still holds the action's lease (its owner token,
-- not yet expired), the step is at the version the sender read, and the
-- evidence the send relies on still holds by the database's clock:
--   retention: a re-send under the provider's key reaches the provider
--     inside the key's retention, measured from the action's claim (the
--     earliest the key can have been used);
--   settle: a send after an authoritative "not found" comes after the last
--     send has settled (the provider's timeout plus its visibility delay).
-- A step claimed before steps named their provider takes the sender's.
-- The lease is extended over the send window, so no other driver can take
-- the action while this write may be in flight. A sender that dies before
-- recording the answer leaves the step unknown: recovery goes by evidence.
WITH held AS (
    UPDATE actions
    SET lease_until = greatest(lease_until, now() + sqlc.arg(send_window)::interval)
    WHERE id = sqlc.arg(action_id) AND lease_owner = sqlc.arg(owner) AND lease_until > now()
      AND (sqlc.narg(retention)::interval IS NULL
           OR now() + sqlc.arg(send_window)::interval < created_at + sqlc.narg(retention)::interval)
    RETURNING id
)
UPDATE action_steps s
SET state = 'unknown', last_sent_at = now(), version = s.version + 1, updated_at = now(),
    provider_kind = coalesce(s.provider_kind, sqlc.arg(provider_kind)::text),
    provider_account = CASE WHEN s.provider_kind IS NULL THEN sqlc.arg(provider_account)::text ELSE s.provider_account END
FROM held
WHERE s.action_id = held.id AND s.name = sqlc.arg(name) AND s.version = sqlc.arg(version)
  AND s.state IN ('pending', 'unknown')
  AND (sqlc.narg(settle)::interval IS NULL OR s.last_sent_at IS NULL
       OR s.last_sent_at + sqlc.narg(settle)::interval < now());

-- name: RecordStep :execrows
-- Records what an attempt or a check learned about a step, if the recorder
-- still holds the action's lease and nobody changed the step since.
WITH held AS (
    SELECT id FROM actions WHERE id = sqlc.arg(action_id) AND lease_owner = sqlc.arg(owner) FOR SHARE
)
UPDATE action_steps s
SET state = sqlc.arg(state),
    -- A step still unknown keeps the reference a provider's signed notice
    -- named for it (see NoticeStepRef) until evidence replaces it.
    provider_ref = coalesce(sqlc.narg(provider_ref), CASE WHEN sqlc.arg(state)::text = 'unknown' THEN s.provider_ref END),
    reject_code = sqlc.narg(reject_code),
    provider_until = coalesce(sqlc.narg(provider_until), s.provider_until),
    result = coalesce(sqlc.narg(result)::jsonb, s.result),
    attempts = s.attempts + sqlc.arg(sent)::integer, checks = sqlc.arg(checks),
    last_error = sqlc.narg(last_error),
    next_check_at = now() + sqlc.arg(backoff)::interval, version = s.version + 1, updated_at = now()
FROM held
WHERE s.action_id = held.id AND s.name = sqlc.arg(name) AND s.version = sqlc.arg(version);

-- name: AddEvent :exec
INSERT INTO action_events (action_id, kind, step, detail) VALUES ($1, $2, $3, $4);

-- name: EventsOfAction :many
SELECT * FROM action_events WHERE action_id = $1 ORDER BY id;

-- name: ReleaseAction :execrows
-- Ends a lease holder's turn on an action: a running action whose required
-- step is unresolved becomes unknown, the action is flagged for an operator
-- when recovery ran out of evidence, and the lease is released.
UPDATE actions
SET state = CASE WHEN state = 'running' THEN 'unknown' ELSE state END,
    needs_operator = needs_operator OR sqlc.arg(needs_operator)::boolean,
    lease_owner = NULL, lease_until = NULL, updated_at = now()
WHERE id = sqlc.arg(id) AND lease_owner = sqlc.arg(owner);

-- name: RenewLease :execrows
-- Extends a lease its holder still holds (no other driver took it over).
UPDATE actions SET lease_until = now() + sqlc.arg(lease)::interval
WHERE id = sqlc.arg(id) AND lease_owner = sqlc.arg(owner);

-- name: TakeLease :execrows
-- An operator's lease on an action waiting for a decision: only when no
-- request or reconciler holds it (so no step is in flight).
UPDATE actions SET lease_owner = sqlc.arg(owner), lease_until = now() + sqlc.arg(lease)::interval, updated_at = now()
WHERE id = sqlc.arg(id) AND (lease_until IS NULL OR lease_until < now())
  AND (state <> 'completed' OR needs_operator);

-- name: LeaseAbandoned :many
-- Running actions whose worker's lease expired: possibly executed. A
-- pending step was certainly not sent (a step is marked before it is sent),
-- an unknown one goes by evidence. SKIP LOCKED and the new owner keep two
-- reconcilers off the same action. Only actions with no open step, or
-- whose next one this server's providers serve (served: capability, kind
-- and account of each, the local provider as kind 'local').
WITH served AS (
    SELECT unnest(sqlc.arg(capabilities)::text[]) AS capability, unnest(sqlc.arg(kinds)::text[]) AS kind,
           unnest(sqlc.arg(accounts)::text[]) AS account
)
UPDATE actions a SET lease_owner = sqlc.arg(owner), lease_until = now() + sqlc.arg(lease)::interval, updated_at = now()
WHERE a.id IN (
    SELECT x.id FROM actions x
    WHERE x.state = 'running' AND x.lease_until < now()
      -- The first open step (the one a driver works on first) is planned
      -- for a provider this server is configured for: the same kind and
      -- account for the step's capability. A step claimed before steps
      -- named their provider goes to a server that serves its capability
      -- remotely, or locally for a write before the required one.
      AND NOT EXISTS (
          SELECT 1 FROM (SELECT o.action_id, o.seq, o.capability, o.provider_kind, o.provider_account FROM action_steps o
                         WHERE o.action_id = x.id AND o.state IN ('pending', 'unknown') ORDER BY o.seq LIMIT 1) f
          WHERE NOT EXISTS (
              SELECT 1 FROM served p
              WHERE p.capability = f.capability
                AND (p.kind = f.provider_kind AND p.account = f.provider_account
                     OR f.provider_kind IS NULL
                        AND (p.kind <> 'local'
                             OR f.seq < (SELECT min(r.seq) FROM action_steps r WHERE r.action_id = f.action_id AND r.required)))))
    ORDER BY x.lease_until
    LIMIT sqlc.arg(max_rows)
    FOR UPDATE SKIP LOCKED
)
RETURNING a.id, a.tenant_id;

-- name: LeaseDue :many
-- Actions with a step due for an attempt or a check, or unknown actions
-- whose required step is already resolved (their driver recorded the answer
-- and died before completing them), not leased by another driver and not
-- waiting for an operator. Found from the open steps (action_steps_open)
-- and the unfinished actions (actions_unfinished), never by reading every
-- action: nearly every action is completed with nothing due, and this runs
-- every pass. Only actions with no open step, or whose next one this
-- server's providers serve (see LeaseAbandoned).
WITH served AS (
    SELECT unnest(sqlc.arg(capabilities)::text[]) AS capability, unnest(sqlc.arg(kinds)::text[]) AS kind,
           unnest(sqlc.arg(accounts)::text[]) AS account
)
UPDATE actions a SET lease_owner = sqlc.arg(owner), lease_until = now() + sqlc.arg(lease)::interval, updated_at = now()
WHERE a.id IN (
    SELECT x.id FROM actions x
    WHERE x.id IN (
            SELECT s.action_id FROM action_steps s
            WHERE s.state IN ('pending', 'unknown') AND s.next_check_at <= now()
            UNION ALL
            SELECT u.id FROM actions u
            WHERE u.state = 'unknown' AND NOT EXISTS (SELECT 1 FROM action_steps s
                   WHERE s.action_id = u.id AND s.required AND s.state IN ('pending', 'unknown')))
      AND NOT x.needs_operator
      AND (x.lease_until IS NULL OR x.lease_until < now())
      AND x.state <> 'running'
      -- The first open step (the one a driver works on first) is planned
      -- for a provider this server is configured for: the same kind and
      -- account for the step's capability. A step claimed before steps
      -- named their provider goes to a server that serves its capability
      -- remotely, or locally for a write before the required one.
      AND NOT EXISTS (
          SELECT 1 FROM (SELECT o.action_id, o.seq, o.capability, o.provider_kind, o.provider_account FROM action_steps o
                         WHERE o.action_id = x.id AND o.state IN ('pending', 'unknown') ORDER BY o.seq LIMIT 1) f
          WHERE NOT EXISTS (
              SELECT 1 FROM served p
              WHERE p.capability = f.capability
                AND (p.kind = f.provider_kind AND p.account = f.provider_account
                     OR f.provider_kind IS NULL
                        AND (p.kind <> 'local'
                             OR f.seq < (SELECT min(r.seq) FROM action_steps r WHERE r.action_id = f.action_id AND r.required)))))
    LIMIT sqlc.arg(max_rows)
    FOR UPDATE SKIP LOCKED
)
RETURNING a.id, a.tenant_id;

-- name: ListActions :many
SELECT * FROM actions
WHERE (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (NOT sqlc.arg(only_needs_operator)::boolean OR needs_operator)
  AND (sqlc.narg(tenant_id)::uuid IS NULL OR tenant_id = sqlc.narg(tenant_id))
ORDER BY created_at DESC
LIMIT sqlc.arg(max_rows);

-- name: ActionByIDAnyTenant :one
SELECT * FROM actions WHERE id = $1;

-- name: ResolveAction :execrows
-- Completes an unfinished action from evidence (a driver) or an operator's
-- decision, if the caller holds its lease; needs_operator stays set when a
-- follow-up step ran out of evidence.
UPDATE actions
SET state = 'completed', outcome = sqlc.arg(outcome), reason = sqlc.narg(reason), http_status = sqlc.arg(http_status),
    resource_id = sqlc.narg(resource_id), result = sqlc.arg(result),
    needs_operator = sqlc.arg(needs_operator), lease_owner = NULL, lease_until = NULL, updated_at = now(), completed_at = now()
WHERE id = sqlc.arg(id) AND lease_owner = sqlc.arg(owner) AND state <> 'completed';

-- name: ClearNeedsOperator :execrows
-- An operator resolved what a completed action was waiting for (a stuck
-- follow-up): it leaves the operator's queue and the operator's lease ends.
UPDATE actions SET needs_operator = false, lease_owner = NULL, lease_until = NULL, updated_at = now()
WHERE id = sqlc.arg(id) AND lease_owner = sqlc.arg(owner);

-- name: NoticeStep :execrows
-- A provider's signed notice (a webhook) about a step whose outcome is
-- unknown: the step is checked now instead of at its backoff, and the
-- notice is kept in the action's timeline. The notice itself decides
-- nothing: the check asks the provider for evidence, under the lease.
WITH noticed AS (
    UPDATE action_steps
    SET next_check_at = least(next_check_at, now())
    WHERE action_steps.action_id = sqlc.arg(step_action) AND action_steps.name = sqlc.arg(step_name) AND action_steps.state = 'unknown'
    RETURNING action_steps.action_id AS noticed_action, action_steps.name AS noticed_step
)
INSERT INTO action_events (action_id, kind, step, detail)
SELECT noticed_action, 'provider_notice', noticed_step, sqlc.arg(detail) FROM noticed;

-- name: NoticeStepRef :execrows
-- NoticeStep for a notice that names the provider's reference of the write
-- (a Twilio status callback names its message): an unknown step keeps the
-- first such reference as where its next check looks first. The reference
-- decides nothing by itself: the check asks the provider whether that write
-- exists and is this step's.
WITH noticed AS (
    UPDATE action_steps
    SET next_check_at = least(next_check_at, now()),
        provider_ref = coalesce(action_steps.provider_ref, sqlc.arg(provider_ref)::text)
    WHERE action_steps.action_id = sqlc.arg(step_action) AND action_steps.name = sqlc.arg(step_name) AND action_steps.state = 'unknown'
    RETURNING action_steps.action_id AS noticed_action, action_steps.name AS noticed_step
)
INSERT INTO action_events (action_id, kind, step, detail)
SELECT noticed_action, 'provider_notice', noticed_step, sqlc.arg(detail) FROM noticed;

-- name: ClaimProviderRef :exec
-- Claims a provider reference found by a search for a step (see migration
-- 0041): a concurrent claim of the same reference waits for this
-- transaction, and finds the reference taken if it commits.
INSERT INTO provider_ref_claims (capability, provider_ref, tenant_id, action_id, step)
VALUES (sqlc.arg(capability), sqlc.arg(provider_ref), sqlc.arg(tenant_id), sqlc.arg(action_id), sqlc.arg(step))
ON CONFLICT (capability, provider_ref) DO NOTHING;

-- name: ProviderRefClaim :one
-- The step that claimed a provider reference.
SELECT tenant_id, action_id, step FROM provider_ref_claims
WHERE capability = sqlc.arg(capability) AND provider_ref = sqlc.arg(provider_ref);

-- name: ProviderRefHeld :one
-- Whether another step of the capability holds a provider reference: a
-- write found by a search that another step holds is not this step's.
SELECT EXISTS (
    SELECT 1 FROM action_steps
    WHERE capability = sqlc.arg(capability) AND provider_ref = sqlc.arg(provider_ref)
      AND state IN ('succeeded', 'unknown')
      AND NOT (action_id = sqlc.arg(step_action) AND name = sqlc.arg(step_name))
);

-- name: AddAnswer :exec
-- What a caller heard about an action (migration 0046).
INSERT INTO action_answers (tenant_id, action_id, platform, call_id, tool, outcome, reason, current, say)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: AnswersOfAction :many
SELECT * FROM action_answers WHERE tenant_id = $1 AND action_id = $2 ORDER BY id LIMIT 200;
