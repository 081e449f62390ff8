-- name: FindOpenSlots :many
-- The tenant's slots starting at or after from_time, in start order (then
-- by id, the order after continues from), with their practitioner and
-- location when they have one and the timezone each is spoken in (its
-- location's, else tenant_zone). Every other bound is optional (NULL: no
-- bound): to_time; the local date (from_date, to_date) and local minute of
-- the day (min_minute, max_minute exclusive) of the start in the slot's own
-- timezone; the start's local wall-clock time (from_local); practitioner,
-- location; a service (the practitioner performs it, works at the slot's
-- location, and the slot is at least the service's duration plus its
-- buffer long); after, a slot of the tenant, to continue after it.
SELECT s.id, s.starts_at, s.ends_at, s.resource, (a.id IS NULL)::boolean AS available,
       s.practitioner_id, COALESCE(p.name, '')::text AS practitioner_name,
       s.location_id, COALESCE(l.name, '')::text AS location_name, COALESCE(l.address, '')::text AS location_address,
       COALESCE(l.timezone, sqlc.arg(tenant_zone)::text)::text AS timezone
FROM slots s
LEFT JOIN practitioners p ON p.tenant_id = s.tenant_id AND p.id = s.practitioner_id
LEFT JOIN locations l ON l.tenant_id = s.tenant_id AND l.id = s.location_id
LEFT JOIN appointments a ON a.tenant_id = s.tenant_id AND a.slot_id = s.id AND a.status = 'active'
WHERE s.tenant_id = sqlc.arg(tenant_id)
  AND s.starts_at >= sqlc.arg(from_time)
  AND (sqlc.narg(to_time)::timestamptz IS NULL OR s.starts_at < sqlc.narg(to_time)::timestamptz)
  AND (NOT sqlc.arg(only_available)::boolean OR a.id IS NULL)
  AND (sqlc.narg(practitioner_id)::uuid IS NULL OR s.practitioner_id = sqlc.narg(practitioner_id)::uuid)
  AND (sqlc.narg(location_id)::uuid IS NULL OR s.location_id = sqlc.narg(location_id)::uuid)
  AND (sqlc.narg(service_id)::uuid IS NULL OR EXISTS (
        SELECT 1
        FROM services sv
        JOIN practitioner_services ps ON ps.service_id = sv.id AND ps.practitioner_id = s.practitioner_id
        JOIN practitioner_locations pl ON pl.practitioner_id = s.practitioner_id AND pl.location_id = s.location_id
        WHERE sv.tenant_id = s.tenant_id AND sv.id = sqlc.narg(service_id)::uuid
          AND s.ends_at - s.starts_at >= make_interval(mins => sv.duration_minutes + sv.buffer_minutes)))
  AND (sqlc.narg(from_date)::text IS NULL
       OR (s.starts_at AT TIME ZONE COALESCE(l.timezone, sqlc.arg(tenant_zone)::text))::date >= sqlc.narg(from_date)::text::date)
  AND (sqlc.narg(to_date)::text IS NULL
       OR (s.starts_at AT TIME ZONE COALESCE(l.timezone, sqlc.arg(tenant_zone)::text))::date <= sqlc.narg(to_date)::text::date)
  AND (sqlc.narg(from_local)::text IS NULL
       OR (s.starts_at AT TIME ZONE COALESCE(l.timezone, sqlc.arg(tenant_zone)::text)) >= sqlc.narg(from_local)::text::timestamp)
  AND (sqlc.narg(min_minute)::integer IS NULL
       OR EXTRACT(EPOCH FROM (s.starts_at AT TIME ZONE COALESCE(l.timezone, sqlc.arg(tenant_zone)::text))::time) >= sqlc.narg(min_minute)::integer * 60)
  AND (sqlc.narg(max_minute)::integer IS NULL
       OR EXTRACT(EPOCH FROM (s.starts_at AT TIME ZONE COALESCE(l.timezone, sqlc.arg(tenant_zone)::text))::time) < sqlc.narg(max_minute)::integer * 60)
  AND (sqlc.narg(after)::uuid IS NULL OR (s.starts_at, s.id) > (
        SELECT c.starts_at, c.id FROM slots c WHERE c.tenant_id = sqlc.arg(tenant_id) AND c.id = sqlc.narg(after)::uuid))
ORDER BY s.starts_at, s.id
LIMIT sqlc.arg(max_rows);

-- name: AvailabilityLocationZone :one
-- The timezone of one of the tenant's locations.
SELECT timezone FROM locations WHERE tenant_id = $1 AND id = $2;

-- name: SlotPlace :one
-- One of the tenant's slots with whose it is and where, and the timezone it
-- is spoken in (its location's, else the tenant's).
SELECT s.starts_at, s.ends_at, s.resource, s.practitioner_id, COALESCE(p.name, '')::text AS practitioner_name,
       s.location_id, COALESCE(l.name, '')::text AS location_name, COALESCE(l.address, '')::text AS location_address,
       COALESCE(l.timezone, tn.timezone)::text AS timezone
FROM slots s
JOIN tenants tn ON tn.id = s.tenant_id
LEFT JOIN practitioners p ON p.tenant_id = s.tenant_id AND p.id = s.practitioner_id
LEFT JOIN locations l ON l.tenant_id = s.tenant_id AND l.id = s.location_id
WHERE s.tenant_id = sqlc.arg(tenant_id) AND s.id = sqlc.arg(slot_id);
