-- The catalog of a tenant with more than one calendar: locations,
-- practitioners (with the locations they work at and the services they
-- perform) and services. Every statement is scoped to the tenant.

-- name: CreateLocation :one
-- Inserts a location unless the tenant has one of that name (in any case):
-- then no row.
INSERT INTO locations (id, tenant_id, name, timezone, address)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant_id, lower(name)) DO NOTHING
RETURNING *;

-- name: LocationByName :one
SELECT * FROM locations WHERE tenant_id = $1 AND lower(name) = lower(sqlc.arg(name)::text);

-- name: LocationByID :one
SELECT * FROM locations WHERE tenant_id = $1 AND id = $2;

-- name: ListLocations :many
SELECT * FROM locations WHERE tenant_id = $1 ORDER BY lower(name), id;

-- name: CreateService :one
-- Inserts a service unless the tenant has one of that name: then no row.
INSERT INTO services (id, tenant_id, name, duration_minutes, buffer_minutes, price_amount, currency)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant_id, lower(name)) DO NOTHING
RETURNING *;

-- name: ServiceByName :one
SELECT * FROM services WHERE tenant_id = $1 AND lower(name) = lower(sqlc.arg(name)::text);

-- name: ServiceByID :one
SELECT * FROM services WHERE tenant_id = $1 AND id = $2;

-- name: ListServices :many
-- The tenant's services by name; with a practitioner, location or both,
-- only those a practitioner (that one) performs at a location (that one)
-- they work at.
SELECT s.* FROM services s
WHERE s.tenant_id = sqlc.arg(tenant_id)
  AND (sqlc.narg(practitioner_id)::uuid IS NULL AND sqlc.narg(location_id)::uuid IS NULL OR EXISTS (
      SELECT 1 FROM practitioner_services ps
      JOIN practitioner_locations pl ON pl.practitioner_id = ps.practitioner_id
      WHERE ps.tenant_id = sqlc.arg(tenant_id) AND ps.service_id = s.id
        AND (sqlc.narg(practitioner_id)::uuid IS NULL OR ps.practitioner_id = sqlc.narg(practitioner_id)::uuid)
        AND (sqlc.narg(location_id)::uuid IS NULL OR pl.location_id = sqlc.narg(location_id)::uuid)))
ORDER BY lower(s.name), s.id;

-- name: CreatePractitioner :one
-- Inserts a practitioner unless the tenant has one of that name: then no row.
INSERT INTO practitioners (id, tenant_id, name)
VALUES ($1, $2, $3)
ON CONFLICT (tenant_id, lower(name)) DO NOTHING
RETURNING *;

-- name: PractitionerByName :one
SELECT * FROM practitioners WHERE tenant_id = $1 AND lower(name) = lower(sqlc.arg(name)::text);

-- name: PractitionerByID :one
SELECT * FROM practitioners WHERE tenant_id = $1 AND id = $2;

-- name: LinkPractitionerLocations :exec
INSERT INTO practitioner_locations (tenant_id, practitioner_id, location_id)
SELECT sqlc.arg(tenant_id), sqlc.arg(practitioner_id), unnest(sqlc.arg(location_ids)::uuid[]);

-- name: LinkPractitionerServices :exec
INSERT INTO practitioner_services (tenant_id, practitioner_id, service_id)
SELECT sqlc.arg(tenant_id), sqlc.arg(practitioner_id), unnest(sqlc.arg(service_ids)::uuid[]);

-- name: MissingLocations :many
-- The ids among the given ones that are not locations of the tenant.
SELECT u.id::uuid AS id FROM unnest(sqlc.arg(ids)::uuid[]) AS u (id)
WHERE NOT EXISTS (SELECT 1 FROM locations l WHERE l.tenant_id = sqlc.arg(tenant_id) AND l.id = u.id)
ORDER BY u.id;

-- name: MissingServices :many
-- The ids among the given ones that are not services of the tenant.
SELECT u.id::uuid AS id FROM unnest(sqlc.arg(ids)::uuid[]) AS u (id)
WHERE NOT EXISTS (SELECT 1 FROM services s WHERE s.tenant_id = sqlc.arg(tenant_id) AND s.id = u.id)
ORDER BY u.id;

-- name: ListPractitioners :many
-- The tenant's practitioners by name with the ids of their locations and
-- services; with a location or a service, only those who work there or
-- perform it.
SELECT p.id, p.name, p.created_at,
       CAST(COALESCE((SELECT array_agg(pl.location_id ORDER BY pl.location_id) FROM practitioner_locations pl
                      WHERE pl.tenant_id = p.tenant_id AND pl.practitioner_id = p.id), '{}') AS uuid[]) AS location_ids,
       CAST(COALESCE((SELECT array_agg(ps.service_id ORDER BY ps.service_id) FROM practitioner_services ps
                      WHERE ps.tenant_id = p.tenant_id AND ps.practitioner_id = p.id), '{}') AS uuid[]) AS service_ids
FROM practitioners p
WHERE p.tenant_id = sqlc.arg(tenant_id)
  AND (sqlc.narg(location_id)::uuid IS NULL OR EXISTS (
      SELECT 1 FROM practitioner_locations pl
      WHERE pl.tenant_id = p.tenant_id AND pl.practitioner_id = p.id AND pl.location_id = sqlc.narg(location_id)::uuid))
  AND (sqlc.narg(service_id)::uuid IS NULL OR EXISTS (
      SELECT 1 FROM practitioner_services ps
      WHERE ps.tenant_id = p.tenant_id AND ps.practitioner_id = p.id AND ps.service_id = sqlc.narg(service_id)::uuid))
ORDER BY lower(p.name), p.id;

-- name: PractitionerWorksAt :one
-- Whether the tenant's practitioner works at the location.
SELECT EXISTS (
    SELECT 1 FROM practitioner_locations
    WHERE tenant_id = $1 AND practitioner_id = $2 AND location_id = $3
)::boolean AS works;

-- name: LockPractitionerSlots :exec
-- Serialises the slot creations of one practitioner (at any location) until
-- the transaction ends, so that two of them never both find a time free and
-- create overlapping slots: a lock on the practitioner's row (FOR NO KEY
-- UPDATE, which the slots' foreign key checks do not wait for).
SELECT 1 FROM practitioners WHERE tenant_id = sqlc.arg(tenant_id) AND id = sqlc.arg(practitioner_id) FOR NO KEY UPDATE;

-- name: InsertPractitionerSlots :many
-- Inserts the given times, which do not overlap each other, as slots of a
-- practitioner at a location, except those that overlap a slot the
-- practitioner already has anywhere; the caller holds LockPractitionerSlots.
-- Returns the ids inserted.
INSERT INTO slots (id, tenant_id, starts_at, ends_at, resource, practitioner_id, location_id)
SELECT u.id, sqlc.arg(tenant_id), u.starts_at, u.ends_at, sqlc.arg(resource), sqlc.arg(practitioner_id), sqlc.arg(location_id)
FROM (
    SELECT unnest(sqlc.arg(ids)::uuid[]) AS id, unnest(sqlc.arg(starts)::timestamptz[]) AS starts_at,
           unnest(sqlc.arg(ends)::timestamptz[]) AS ends_at
) AS u
WHERE NOT EXISTS (
    SELECT 1 FROM slots s
    WHERE s.tenant_id = sqlc.arg(tenant_id) AND s.practitioner_id = sqlc.arg(practitioner_id)
      AND s.starts_at < u.ends_at AND s.ends_at > u.starts_at
)
RETURNING id, starts_at, ends_at;

-- name: PractitionerSlotsOverlapping :many
-- The practitioner's slots, at any location, that overlap [starts, ends).
SELECT s.id, s.starts_at, s.ends_at, s.location_id
FROM slots s
WHERE s.tenant_id = sqlc.arg(tenant_id) AND s.practitioner_id = sqlc.arg(practitioner_id)
  AND s.starts_at < sqlc.arg(ends) AND s.ends_at > sqlc.arg(starts)
ORDER BY s.starts_at, s.id;

-- name: BookingZones :many
-- The timezones a local time of a booking by service is read in: the
-- location's when one is named, else those of the tenant's locations where
-- a practitioner who performs the service (that one, when named) works.
SELECT DISTINCT l.timezone FROM locations l
WHERE l.tenant_id = sqlc.arg(tenant_id)
  AND (sqlc.narg(location_id)::uuid IS NULL OR l.id = sqlc.narg(location_id)::uuid)
  AND (sqlc.narg(location_id)::uuid IS NOT NULL OR EXISTS (
      SELECT 1 FROM practitioner_locations pl
      JOIN practitioner_services ps ON ps.practitioner_id = pl.practitioner_id
      WHERE pl.tenant_id = sqlc.arg(tenant_id) AND pl.location_id = l.id AND ps.service_id = sqlc.arg(service_id)
        AND (sqlc.narg(practitioner_id)::uuid IS NULL OR pl.practitioner_id = sqlc.narg(practitioner_id)::uuid)))
ORDER BY 1;
