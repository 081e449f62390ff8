-- name: CreateSlot :one
INSERT INTO slots (id, tenant_id, starts_at, ends_at, resource)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: ListSlots :many
-- Slots starting at or after from_time, optionally only those without an active booking.
SELECT s.id, s.tenant_id, s.starts_at, s.ends_at, s.resource, s.created_at, (a.id IS NULL)::boolean AS available
FROM slots s
LEFT JOIN appointments a ON a.tenant_id = s.tenant_id AND a.slot_id = s.id AND a.status = 'active'
WHERE s.tenant_id = $1
  AND s.starts_at >= sqlc.arg(from_time)
  AND (NOT sqlc.arg(only_available)::boolean OR a.id IS NULL)
ORDER BY s.starts_at, s.id
LIMIT sqlc.arg(max_rows);

-- name: BookSlot :one
-- Books a future slot for an existing customer of the tenant unless the slot
-- already holds an active appointment; the partial unique index decides
-- between concurrent bookings. One statement, so one round trip: the row
-- says whether the customer exists and, if booked, the appointment.
WITH c AS (
    SELECT customers.id FROM customers
    WHERE customers.tenant_id = sqlc.arg(tenant_id) AND customers.id = sqlc.arg(customer_id)
), s AS (
    SELECT slots.id, slots.starts_at, slots.ends_at FROM slots
    WHERE slots.tenant_id = sqlc.arg(tenant_id) AND slots.id = sqlc.arg(slot_id) AND slots.starts_at > now()
), ins AS (
    INSERT INTO appointments (id, tenant_id, customer_id, slot_id, service, action_id)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), c.id, s.id, sqlc.arg(service), sqlc.arg(action_id)
    FROM s, c
    ON CONFLICT (tenant_id, slot_id) WHERE status = 'active' DO NOTHING
    RETURNING appointments.id, appointments.customer_id, appointments.slot_id, appointments.service, appointments.status
)
SELECT EXISTS (SELECT 1 FROM c) AS customer_found,
       ins.id, ins.customer_id, ins.slot_id, ins.service, ins.status, s.starts_at, s.ends_at
FROM (SELECT 1) AS one
LEFT JOIN ins ON true
LEFT JOIN s ON s.id = ins.slot_id;

-- name: AppointmentByID :one
SELECT a.id, a.customer_id, a.slot_id, a.service, a.status, s.starts_at, s.ends_at
FROM appointments a JOIN slots s ON s.tenant_id = a.tenant_id AND s.id = a.slot_id
WHERE a.tenant_id = $1 AND a.id = $2;

-- name: CancelAppointment :one
WITH c AS (
    UPDATE appointments SET status = 'cancelled', updated_at = now()
    WHERE appointments.tenant_id = $1 AND appointments.id = $2 AND appointments.status = 'active'
    RETURNING id, customer_id, slot_id, service, status
)
SELECT c.id, c.customer_id, c.slot_id, c.service, c.status, s.starts_at, s.ends_at
FROM c JOIN slots s ON s.tenant_id = $1 AND s.id = c.slot_id;

-- name: ListCustomerAppointments :many
-- A customer's active appointments starting at or after from_time, soonest
-- first, each with whose slot it is and where, and the timezone it is
-- spoken in (its location's, else the tenant's).
SELECT a.id, a.customer_id, a.slot_id, a.service, a.status, s.starts_at, s.ends_at,
       s.practitioner_id, COALESCE(p.name, '')::text AS practitioner_name,
       s.location_id, COALESCE(l.name, '')::text AS location_name, COALESCE(l.address, '')::text AS location_address,
       COALESCE(l.timezone, tn.timezone)::text AS timezone
FROM appointments a JOIN slots s ON s.id = a.slot_id AND s.tenant_id = a.tenant_id
JOIN tenants tn ON tn.id = a.tenant_id
LEFT JOIN practitioners p ON p.tenant_id = s.tenant_id AND p.id = s.practitioner_id
LEFT JOIN locations l ON l.tenant_id = s.tenant_id AND l.id = s.location_id
WHERE a.tenant_id = sqlc.arg(tenant_id) AND a.customer_id = sqlc.arg(customer_id) AND a.status = 'active'
  AND s.starts_at >= sqlc.arg(from_time)
ORDER BY s.starts_at, a.id
LIMIT sqlc.arg(max_rows);

-- name: LockSlotSchedule :exec
-- Serialises the schedule applications of a tenant until the transaction
-- ends, so that two of them never both find a time free and both insert it:
-- a lock on the tenant's row (FOR NO KEY UPDATE, which the foreign keys'
-- checks do not wait for), the same on every connection, through a
-- transaction-pooling proxy and under Citus.
SELECT 1 FROM tenants WHERE id = sqlc.arg(tenant_id) FOR NO KEY UPDATE;

-- name: InsertScheduledSlots :execrows
-- Inserts the given times as slots of one resource, except those the
-- resource already has (same start and end); the caller holds
-- LockSlotSchedule. One statement for the whole schedule.
INSERT INTO slots (id, tenant_id, starts_at, ends_at, resource)
SELECT u.id, sqlc.arg(tenant_id), u.starts_at, u.ends_at, sqlc.arg(resource)
FROM (
    -- Set-returning functions in one select list advance together: row i
    -- holds the i-th id, start and end.
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id, unnest(sqlc.arg(starts)::timestamptz[]) AS starts_at,
           unnest(sqlc.arg(ends)::timestamptz[]) AS ends_at
) AS u
WHERE NOT EXISTS (
    SELECT 1 FROM slots s
    WHERE s.tenant_id = sqlc.arg(tenant_id) AND s.resource = sqlc.arg(resource)
      AND s.starts_at = u.starts_at AND s.ends_at = u.ends_at
);

-- name: ClaimAndBook :one
-- A booking's one round trip (see db.Statement): claim, booking, completion
-- and the key's action in one statement, which is its own transaction. When
-- the key is already taken (seen in the statement's snapshot) it writes
-- nothing and returns the stored action. Otherwise it books the slot unless
-- it is taken (the partial unique index decides between concurrent
-- bookings) and inserts the action already completed: confirmed with the
-- appointment, or rejected with CUSTOMER_NOT_FOUND, ALREADY_BOOKED_IN_CALL
-- (see stands), SLOT_NOT_FOUND or SLOT_UNAVAILABLE. A concurrent attempt of
-- the same key makes the action's INSERT fail on the key's unique index,
-- which rolls the booking back with it.
--
-- A booking in a voice call (call_id set) records the call and its
-- booking_ref, and is refused while the customer has an active appointment
-- booked in the same call under the same booking_ref (stands): the answer
-- is that appointment. Two such bookings at once both find none; the second
-- INSERT then fails on appointments_per_call, and the idempotency core runs
-- the statement again with a fresh snapshot, which finds the first. The claim's lock wait is bounded by the shorter of claim_wait and the
-- connection's lock_timeout.
--
-- The answer's JSON is written here, in the statement's text, as every
-- ClaimAnd statement writes its own: the action row stores it, and that row
-- is inserted by this statement, so an answer built in Go from returned
-- rows would cost a second round trip (an UPDATE of the stored answer, in a
-- transaction of its own). The text ships in the binary: renaming a field
-- needs no migration. It is the JSON encoding/json writes for the same
-- values (times in RFC 3339, UTC, fractional seconds only when there are
-- any), except that <, > and & are not escaped.
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), stands AS (
    SELECT a.id, a.customer_id, a.slot_id, a.service, a.status, s.starts_at, s.ends_at, a.booking_ref
    FROM appointments a JOIN slots s ON s.tenant_id = a.tenant_id AND s.id = a.slot_id
    WHERE (SELECT yes FROM fresh) AND sqlc.narg(call_id)::text IS NOT NULL
      AND a.tenant_id = sqlc.arg(tenant_id) AND a.customer_id = sqlc.arg(customer_id)
      AND a.call_platform = sqlc.narg(call_platform)::text AND a.call_id = sqlc.narg(call_id)::text
      AND a.booking_ref = sqlc.arg(booking_ref) AND a.status = 'active'
    LIMIT 1
), booked AS (
    INSERT INTO appointments (id, tenant_id, customer_id, slot_id, service, action_id, call_platform, call_id, booking_ref)
    SELECT sqlc.arg(appointment_id), sqlc.arg(tenant_id), c.id, s.id, sqlc.arg(service), sqlc.arg(id),
           sqlc.narg(call_platform), sqlc.narg(call_id), sqlc.arg(booking_ref)
    FROM customers c, slots s
    WHERE (SELECT yes FROM fresh) AND NOT EXISTS (SELECT 1 FROM stands)
      AND c.tenant_id = sqlc.arg(tenant_id) AND c.id = sqlc.arg(customer_id)
      AND s.tenant_id = sqlc.arg(tenant_id) AND s.id = sqlc.arg(slot_id) AND s.starts_at > now()
    ON CONFLICT (tenant_id, slot_id) WHERE status = 'active' DO NOTHING
    RETURNING appointments.id, appointments.customer_id, appointments.slot_id, appointments.service, appointments.status
), answer AS (
    SELECT CASE WHEN ap.id IS NULL THEN 'rejected' ELSE 'confirmed' END AS outcome,
           r.reason,
           CASE WHEN ap.id IS NULL THEN 422 ELSE 201 END AS http_status,
           ap.id::text AS resource_id,
           CASE WHEN ap.id IS NOT NULL THEN
                    '{"id":' || to_json(ap.id) || ',"customer_id":' || to_json(ap.customer_id) ||
                    ',"slot_id":' || to_json(ap.slot_id) || ',"service":' || to_json(ap.service) ||
                    ',"status":' || to_json(ap.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(sl.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(sl.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                WHEN r.reason = 'CUSTOMER_NOT_FOUND' THEN '{"customer_id":' || to_json(sqlc.arg(customer_id)::uuid) || '}'
                WHEN r.reason = 'ALREADY_BOOKED_IN_CALL' THEN
                    '{"appointment_id":' || to_json(st.id) || ',"customer_id":' || to_json(st.customer_id) ||
                    ',"slot_id":' || to_json(st.slot_id) || ',"service":' || to_json(st.service) ||
                    ',"status":' || to_json(st.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(st.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(st.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"booking_ref":' || to_json(st.booking_ref) || '}'
                ELSE '{"slot_id":' || to_json(sqlc.arg(slot_id)::uuid) || '}' END AS body
    FROM fresh
    LEFT JOIN booked ap ON true
    LEFT JOIN slots sl ON sl.tenant_id = sqlc.arg(tenant_id) AND sl.id = ap.slot_id
    LEFT JOIN stands st ON true
    CROSS JOIN LATERAL (
        SELECT CASE WHEN ap.id IS NOT NULL THEN NULL
                    WHEN NOT EXISTS (SELECT 1 FROM customers c WHERE c.tenant_id = sqlc.arg(tenant_id) AND c.id = sqlc.arg(customer_id))
                        THEN 'CUSTOMER_NOT_FOUND'
                    WHEN st.id IS NOT NULL THEN 'ALREADY_BOOKED_IN_CALL'
                    WHEN NOT EXISTS (SELECT 1 FROM slots s WHERE s.tenant_id = sqlc.arg(tenant_id) AND s.id = sqlc.arg(slot_id))
                        THEN 'SLOT_NOT_FOUND'
                    ELSE 'SLOT_UNAVAILABLE' END AS reason
    ) AS r
    WHERE fresh.yes
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;

-- name: ClaimAndReschedule :one
-- A move's one round trip, as ClaimAndBook: when the key is not taken, it
-- locks the appointment (seeing a change another transaction committed
-- meanwhile), moves it to the new slot if it is active, the slot is the
-- tenant's, in the future and free, and inserts the action already
-- completed: confirmed with the appointment (unchanged when it is already
-- in that slot), or rejected with APPOINTMENT_NOT_FOUND,
-- APPOINTMENT_NOT_ACTIVE, SLOT_NOT_FOUND or SLOT_UNAVAILABLE. A concurrent
-- booking of the new slot makes the unique index fail; the idempotency core
-- then runs the statement again with a fresh snapshot.
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), cur AS (
    SELECT a.id, a.customer_id, a.slot_id, a.service, a.status, s.starts_at, s.ends_at
    FROM appointments a JOIN slots s ON s.tenant_id = a.tenant_id AND s.id = a.slot_id
    WHERE (SELECT yes FROM fresh) AND a.tenant_id = sqlc.arg(tenant_id) AND a.id = sqlc.arg(appointment_id)
    FOR UPDATE OF a
), moved AS (
    UPDATE appointments a
    SET slot_id = s.id, updated_at = now()
    FROM slots s
    WHERE a.tenant_id = sqlc.arg(tenant_id) AND a.id IN (SELECT cur.id FROM cur WHERE cur.status = 'active' AND cur.slot_id <> sqlc.arg(slot_id)::uuid)
      AND s.tenant_id = sqlc.arg(tenant_id) AND s.id = sqlc.arg(slot_id) AND s.starts_at > now()
      AND NOT EXISTS (SELECT 1 FROM appointments o WHERE o.tenant_id = sqlc.arg(tenant_id) AND o.slot_id = sqlc.arg(slot_id) AND o.status = 'active')
    RETURNING a.id, a.customer_id, a.slot_id, a.service, a.status, s.starts_at, s.ends_at
), decided AS (
    SELECT cur.id AS cur_id, cur.status AS cur_status,
           mv.id IS NOT NULL OR (cur.status = 'active' AND cur.slot_id = sqlc.arg(slot_id)) AS confirmed,
           CASE WHEN mv.id IS NOT NULL THEN
                    '{"id":' || to_json(mv.id) || ',"customer_id":' || to_json(mv.customer_id) ||
                    ',"slot_id":' || to_json(mv.slot_id) || ',"service":' || to_json(mv.service) ||
                    ',"status":' || to_json(mv.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(mv.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(mv.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                WHEN cur.id IS NOT NULL THEN
                    '{"id":' || to_json(cur.id) || ',"customer_id":' || to_json(cur.customer_id) ||
                    ',"slot_id":' || to_json(cur.slot_id) || ',"service":' || to_json(cur.service) ||
                    ',"status":' || to_json(cur.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(cur.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(cur.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
           END AS appointment
    FROM fresh
    LEFT JOIN cur ON true
    LEFT JOIN moved mv ON true
    WHERE fresh.yes
), answer AS (
    SELECT CASE WHEN confirmed THEN 'confirmed' ELSE 'rejected' END AS outcome,
           CASE WHEN confirmed THEN NULL
                WHEN cur_id IS NULL THEN 'APPOINTMENT_NOT_FOUND'
                WHEN cur_status <> 'active' THEN 'APPOINTMENT_NOT_ACTIVE'
                WHEN NOT EXISTS (SELECT 1 FROM slots s WHERE s.tenant_id = sqlc.arg(tenant_id) AND s.id = sqlc.arg(slot_id))
                    THEN 'SLOT_NOT_FOUND'
                ELSE 'SLOT_UNAVAILABLE' END AS reason,
           CASE WHEN confirmed THEN 200 ELSE 422 END AS http_status,
           CASE WHEN confirmed THEN cur_id::text END AS resource_id,
           CASE WHEN confirmed OR cur_status <> 'active' THEN appointment
                WHEN cur_id IS NULL THEN '{"appointment_id":' || to_json(sqlc.arg(appointment_id)::uuid) || '}'
                ELSE '{"slot_id":' || to_json(sqlc.arg(slot_id)::uuid) || '}' END AS body
    FROM decided
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;

-- name: ClaimAndCancel :one
-- A cancellation's one round trip, as ClaimAndBook: when the key is not
-- taken, it cancels the appointment if it is active and inserts the action
-- already completed: confirmed with the appointment, or rejected with
-- APPOINTMENT_NOT_FOUND or APPOINTMENT_NOT_ACTIVE (with the appointment as
-- it is: read with a share lock, so a cancellation another transaction
-- committed during this statement is seen).
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), cancelled AS (
    UPDATE appointments SET status = 'cancelled', updated_at = now()
    WHERE (SELECT yes FROM fresh)
      AND appointments.tenant_id = sqlc.arg(tenant_id) AND appointments.id = sqlc.arg(appointment_id)
      AND appointments.status = 'active'
    RETURNING appointments.id, appointments.customer_id, appointments.slot_id, appointments.service, appointments.status
), answer AS (
    SELECT CASE WHEN ca.id IS NULL THEN 'rejected' ELSE 'confirmed' END AS outcome,
           CASE WHEN ca.id IS NOT NULL THEN NULL WHEN cur.id IS NULL THEN 'APPOINTMENT_NOT_FOUND'
                ELSE 'APPOINTMENT_NOT_ACTIVE' END AS reason,
           CASE WHEN ca.id IS NULL THEN 422 ELSE 200 END AS http_status,
           ca.id::text AS resource_id,
           CASE WHEN ca.id IS NOT NULL THEN
                    '{"id":' || to_json(ca.id) || ',"customer_id":' || to_json(ca.customer_id) ||
                    ',"slot_id":' || to_json(ca.slot_id) || ',"service":' || to_json(ca.service) ||
                    ',"status":' || to_json(ca.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(sl.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(sl.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                WHEN cur.id IS NOT NULL THEN
                    '{"id":' || to_json(cur.id) || ',"customer_id":' || to_json(cur.customer_id) ||
                    ',"slot_id":' || to_json(cur.slot_id) || ',"service":' || to_json(cur.service) ||
                    ',"status":' || to_json(cur.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(cur.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(cur.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') || '}'
                ELSE '{"appointment_id":' || to_json(sqlc.arg(appointment_id)::uuid) || '}' END AS body
    FROM fresh
    LEFT JOIN cancelled ca ON true
    LEFT JOIN slots sl ON sl.tenant_id = sqlc.arg(tenant_id) AND sl.id = ca.slot_id
    LEFT JOIN LATERAL (
        SELECT a.id, a.customer_id, a.slot_id, a.service, a.status, s.starts_at, s.ends_at
        FROM appointments a JOIN slots s ON s.tenant_id = a.tenant_id AND s.id = a.slot_id
        WHERE ca.id IS NULL AND a.tenant_id = sqlc.arg(tenant_id) AND a.id = sqlc.arg(appointment_id)
        FOR SHARE OF a
    ) AS cur ON true
    WHERE fresh.yes
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;

-- name: ClaimAndBookService :one
-- A booking of a service at a time (see ClaimAndBook): when the key is not
-- taken, it picks the free slot that starts then (starts_at, an instant, or
-- starts_local, a wall-clock time in the slot's location's timezone) whose
-- practitioner performs the service at the slot's location and which is at
-- least the service's duration plus its buffer long, optionally of one
-- practitioner or at one location; of those, the first by practitioner name
-- and id, then location name and id. It books it, recording the service and
-- its name, and inserts the action already completed: confirmed with the
-- appointment, or rejected with CUSTOMER_NOT_FOUND, ALREADY_BOOKED_IN_CALL
-- (one booking per customer, call and booking_ref, as ClaimAndBook),
-- SERVICE_NOT_FOUND or NO_PRACTITIONER_FREE. The booking has no ON CONFLICT: when a concurrent
-- booking takes the picked slot first, the partial unique index fails and
-- the idempotency core runs the statement again with a fresh snapshot, which
-- picks the next free practitioner or finds none.
WITH prior AS (
    SELECT * FROM actions
    WHERE actions.tenant_id = sqlc.arg(tenant_id) AND actions.idempotency_key = sqlc.arg(idempotency_key)
), fresh AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM prior) THEN false
                ELSE oncecall_key_free(sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(claim_wait)) END AS yes
), svc AS (
    SELECT sv.id, sv.name, sv.duration_minutes, sv.buffer_minutes FROM services sv
    WHERE sv.tenant_id = sqlc.arg(tenant_id) AND sv.id = sqlc.arg(service_id)
), pick AS (
    SELECT s.id
    FROM svc
    JOIN practitioner_services ps ON ps.service_id = svc.id
    JOIN practitioners p ON p.tenant_id = sqlc.arg(tenant_id) AND p.id = ps.practitioner_id
    JOIN practitioner_locations pl ON pl.practitioner_id = p.id
    JOIN locations l ON l.tenant_id = sqlc.arg(tenant_id) AND l.id = pl.location_id
    JOIN slots s ON s.tenant_id = sqlc.arg(tenant_id) AND s.practitioner_id = p.id AND s.location_id = l.id
    WHERE (SELECT yes FROM fresh)
      AND s.starts_at > now()
      AND (sqlc.narg(starts_at)::timestamptz IS NULL OR s.starts_at = sqlc.narg(starts_at)::timestamptz)
      AND (sqlc.narg(starts_local)::text IS NULL OR (s.starts_at AT TIME ZONE l.timezone) = sqlc.narg(starts_local)::text::timestamp)
      AND (sqlc.narg(practitioner_id)::uuid IS NULL OR p.id = sqlc.narg(practitioner_id)::uuid)
      AND (sqlc.narg(location_id)::uuid IS NULL OR l.id = sqlc.narg(location_id)::uuid)
      AND s.ends_at - s.starts_at >= make_interval(mins => svc.duration_minutes + svc.buffer_minutes)
      AND NOT EXISTS (SELECT 1 FROM appointments o WHERE o.tenant_id = s.tenant_id AND o.slot_id = s.id AND o.status = 'active')
    ORDER BY lower(p.name), p.id, lower(l.name), l.id, s.id
    LIMIT 1
), stands AS (
    SELECT a.id, a.customer_id, a.slot_id, a.service, a.status, s.starts_at, s.ends_at, a.booking_ref
    FROM appointments a JOIN slots s ON s.tenant_id = a.tenant_id AND s.id = a.slot_id
    WHERE (SELECT yes FROM fresh) AND sqlc.narg(call_id)::text IS NOT NULL
      AND a.tenant_id = sqlc.arg(tenant_id) AND a.customer_id = sqlc.arg(customer_id)
      AND a.call_platform = sqlc.narg(call_platform)::text AND a.call_id = sqlc.narg(call_id)::text
      AND a.booking_ref = sqlc.arg(booking_ref) AND a.status = 'active'
    LIMIT 1
), booked AS (
    INSERT INTO appointments (id, tenant_id, customer_id, slot_id, service, service_id, action_id,
                              call_platform, call_id, booking_ref)
    SELECT sqlc.arg(appointment_id), sqlc.arg(tenant_id), c.id, pick.id, svc.name, svc.id, sqlc.arg(id),
           sqlc.narg(call_platform), sqlc.narg(call_id), sqlc.arg(booking_ref)
    FROM customers c, pick, svc
    WHERE c.tenant_id = sqlc.arg(tenant_id) AND c.id = sqlc.arg(customer_id) AND NOT EXISTS (SELECT 1 FROM stands)
    RETURNING appointments.id, appointments.customer_id, appointments.slot_id, appointments.service, appointments.status
), answer AS (
    SELECT CASE WHEN ap.id IS NULL THEN 'rejected' ELSE 'confirmed' END AS outcome,
           r.reason,
           CASE WHEN ap.id IS NULL THEN 422 ELSE 201 END AS http_status,
           ap.id::text AS resource_id,
           CASE WHEN ap.id IS NOT NULL THEN
                    '{"id":' || to_json(ap.id) || ',"customer_id":' || to_json(ap.customer_id) ||
                    ',"slot_id":' || to_json(ap.slot_id) || ',"service":' || to_json(ap.service) ||
                    ',"status":' || to_json(ap.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(sl.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(sl.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"service_id":' || to_json(sqlc.arg(service_id)::uuid) || '}'
                WHEN r.reason = 'CUSTOMER_NOT_FOUND' THEN '{"customer_id":' || to_json(sqlc.arg(customer_id)::uuid) || '}'
                WHEN r.reason = 'ALREADY_BOOKED_IN_CALL' THEN
                    '{"appointment_id":' || to_json(st.id) || ',"customer_id":' || to_json(st.customer_id) ||
                    ',"slot_id":' || to_json(st.slot_id) || ',"service":' || to_json(st.service) ||
                    ',"status":' || to_json(st.status) ||
                    ',"starts_at":' || to_json(rtrim(rtrim(to_char(st.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"ends_at":' || to_json(rtrim(rtrim(to_char(st.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z') ||
                    ',"booking_ref":' || to_json(st.booking_ref) || '}'
                ELSE '{"service_id":' || to_json(sqlc.arg(service_id)::uuid) || '}' END AS body
    FROM fresh
    LEFT JOIN booked ap ON true
    LEFT JOIN slots sl ON sl.tenant_id = sqlc.arg(tenant_id) AND sl.id = ap.slot_id
    LEFT JOIN stands st ON true
    CROSS JOIN LATERAL (
        SELECT CASE WHEN ap.id IS NOT NULL THEN NULL
                    WHEN NOT EXISTS (SELECT 1 FROM customers c WHERE c.tenant_id = sqlc.arg(tenant_id) AND c.id = sqlc.arg(customer_id))
                        THEN 'CUSTOMER_NOT_FOUND'
                    WHEN st.id IS NOT NULL THEN 'ALREADY_BOOKED_IN_CALL'
                    WHEN NOT EXISTS (SELECT 1 FROM svc) THEN 'SERVICE_NOT_FOUND'
                    ELSE 'NO_PRACTITIONER_FREE' END AS reason
    ) AS r
    WHERE fresh.yes
), claimed AS (
    INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id, call_platform,
                         state, outcome, reason, http_status, resource_id, result, completed_at)
    SELECT sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(idempotency_key), sqlc.arg(operation), sqlc.arg(fingerprint),
           sqlc.arg(request), sqlc.narg(call_id), sqlc.narg(call_platform), 'completed', answer.outcome, answer.reason, answer.http_status,
           answer.resource_id, convert_to(answer.body, 'UTF8'), now()
    FROM answer
    RETURNING *
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM prior;
