-- name: UpsertCalendarConnection :one
-- A tenant's connection: a new one, or the one it has with another
-- provider, credentials or settings. The connection keeps its id while the
-- provider stays the same, so steps planned for it are still driven.
INSERT INTO calendar_connections (tenant_id, id, provider, credentials, base_url, settings)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id) DO UPDATE SET
    id = CASE WHEN calendar_connections.provider = excluded.provider THEN calendar_connections.id ELSE excluded.id END,
    provider = excluded.provider, credentials = excluded.credentials, base_url = excluded.base_url,
    settings = excluded.settings, updated_at = now()
RETURNING *;

-- name: CalendarConnection :one
SELECT * FROM calendar_connections WHERE tenant_id = $1;

-- name: CalendarConnectionByID :one
SELECT * FROM calendar_connections WHERE id = $1;

-- name: CalendarConnections :many
-- Every tenant's connection: a server lists those it can reach, whose
-- steps its reconciler may lease.
SELECT * FROM calendar_connections ORDER BY tenant_id;

-- name: DeleteCalendarMappings :exec
DELETE FROM calendar_mappings WHERE tenant_id = $1;

-- name: DeleteCalendarConnection :execrows
DELETE FROM calendar_connections WHERE tenant_id = $1;

-- name: InsertCalendarMapping :exec
INSERT INTO calendar_mappings (tenant_id, practitioner_id, location_id, calendar_id)
VALUES ($1, sqlc.narg(practitioner_id), sqlc.narg(location_id), $2);

-- name: CalendarMappings :many
SELECT m.practitioner_id, m.location_id, m.calendar_id,
       coalesce(p.name, '')::text AS practitioner, coalesce(l.name, '')::text AS location
FROM calendar_mappings m
LEFT JOIN practitioners p ON p.tenant_id = m.tenant_id AND p.id = m.practitioner_id
LEFT JOIN locations l ON l.tenant_id = m.tenant_id AND l.id = m.location_id
WHERE m.tenant_id = $1
ORDER BY p.name NULLS FIRST, l.name NULLS FIRST;

-- name: InsertCalendarAppointment :exec
-- A booking about to be sent: it holds its time on its calendar until the
-- calendar's answer (CalendarBookingsInFlight).
INSERT INTO calendar_appointments (tenant_id, id, customer_id, slot_id, practitioner_id, location_id, service_id,
                                   service, provider, calendar_id, starts_at, ends_at, status, call_platform, call_id, booking_ref)
VALUES ($1, $2, $3, sqlc.narg(slot_id), sqlc.narg(practitioner_id), sqlc.narg(location_id), sqlc.narg(service_id),
        $4, $5, $6, $7, $8, 'booking', sqlc.narg(call_platform), sqlc.narg(call_id), sqlc.arg(booking_ref));

-- name: CalendarAppointment :one
SELECT * FROM calendar_appointments WHERE tenant_id = $1 AND id = $2;

-- name: CalendarAppointmentsByEvent :many
SELECT * FROM calendar_appointments
WHERE tenant_id = $1 AND provider = $2 AND calendar_id = $3 AND event_id = ANY(sqlc.arg(event_ids)::text[]);

-- name: CalendarBooked :execrows
-- The calendar holds the booking: the event it made.
UPDATE calendar_appointments SET status = 'active', event_id = $3, etag = sqlc.narg(etag),
    starts_at = coalesce(sqlc.narg(starts_at), starts_at), ends_at = coalesce(sqlc.narg(ends_at), ends_at),
    read_at = NULL, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'booking';

-- name: DeleteCalendarBooking :execrows
-- The calendar refused the booking: nothing of it exists.
DELETE FROM calendar_appointments WHERE tenant_id = $1 AND id = $2 AND status = 'booking';

-- name: HoldCalendarAppointment :execrows
-- Holds an active appointment for the action moving or cancelling it;
-- nothing when another action holds it or it is not active.
UPDATE calendar_appointments SET held_by = sqlc.arg(action_id), updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND (held_by IS NULL OR held_by = sqlc.arg(action_id));

-- name: ReleaseCalendarAppointment :execrows
UPDATE calendar_appointments SET held_by = NULL, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND held_by = sqlc.arg(action_id);

-- name: CalendarMoved :execrows
-- The calendar moved the appointment for the holding action.
UPDATE calendar_appointments SET held_by = NULL, event_id = $3, etag = sqlc.narg(etag), slot_id = sqlc.narg(slot_id),
    starts_at = $4, ends_at = $5, read_at = NULL, updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND held_by = sqlc.arg(action_id);

-- name: CalendarCancelled :execrows
-- The calendar cancelled the appointment for the holding action.
UPDATE calendar_appointments SET held_by = NULL, status = 'cancelled', updated_at = now()
WHERE tenant_id = $1 AND id = $2 AND held_by = sqlc.arg(action_id);

-- name: CalendarRead :execrows
-- What a read of the calendar showed of an appointment: its time and
-- version now, or that it is gone (status cancelled). An appointment a
-- move or cancel holds is left to that action. updated_at stays when
-- oncecall last wrote the appointment.
UPDATE calendar_appointments SET event_id = $3, etag = sqlc.narg(etag), starts_at = $4, ends_at = $5,
    status = $6, read_at = now()
WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND held_by IS NULL;

-- name: CustomerCalendarAppointments :many
-- A customer's appointments in remote calendars whose end is after
-- from_time, soonest first: active ones, and bookings still in flight.
SELECT * FROM calendar_appointments
WHERE tenant_id = $1 AND customer_id = $2 AND ends_at > sqlc.arg(from_time) AND status IN ('active', 'booking')
ORDER BY starts_at, id
LIMIT sqlc.arg(max_rows);

-- name: CalendarTimesHeld :many
-- The appointments oncecall holds on a calendar over [from_time, to_time):
-- bookings in flight (their event may not be in the calendar yet), and,
-- with include_active, every active one (the http provider, whose calendar
-- cannot be read, or those written too recently for a read to show).
SELECT id, starts_at, ends_at, status FROM calendar_appointments
WHERE tenant_id = $1 AND calendar_id = $2 AND starts_at < sqlc.arg(to_time) AND ends_at > sqlc.arg(from_time)
  AND (status = 'booking'
       OR status = 'active' AND (sqlc.arg(include_active)::boolean OR read_at IS NULL AND updated_at > sqlc.arg(written_after)))
ORDER BY starts_at;

-- name: LockCalendarSlot :one
-- Locks a slot while a booking or a move into it on a remote calendar is
-- checked and recorded: two of them wait for each other, and the second
-- sees the first's booking in flight (a practitioner's slots never
-- overlap, so this orders every booking of their time).
SELECT id FROM slots WHERE tenant_id = $1 AND id = $2 FOR UPDATE;

-- name: CalendarBookingInCall :one
-- The customer's appointment booked in a voice call under booking_ref that
-- stands or is still waiting for the calendar's answer.
SELECT * FROM calendar_appointments
WHERE tenant_id = $1 AND customer_id = $2 AND call_platform = $3 AND call_id = $4 AND booking_ref = $5
  AND status IN ('booking', 'active')
LIMIT 1;
