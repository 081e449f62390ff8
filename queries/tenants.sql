-- name: CreateTenant :exec
INSERT INTO tenants (id, name, dasha_org_id, timezone, locale) VALUES ($1, $2, $3, $4, $5);

-- name: CreateAPIKey :exec
INSERT INTO api_keys (key_hash, tenant_id, prefix, scope) VALUES ($1, $2, $3, $4);

-- name: TenantByKeyHash :one
SELECT t.id, t.name, t.dasha_org_id, k.scope
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
WHERE k.key_hash = $1 AND k.revoked_at IS NULL;

-- name: TenantByName :one
SELECT id, name, dasha_org_id FROM tenants WHERE name = $1 ORDER BY created_at LIMIT 1;

-- name: TenantByID :one
SELECT id, name, dasha_org_id FROM tenants WHERE id = $1;

-- name: TenantTimezone :one
SELECT timezone FROM tenants WHERE id = $1;

-- name: TenantClock :one
SELECT timezone, locale FROM tenants WHERE id = $1;

-- name: UpdateTenantClock :one
-- Sets the timezone, the locale, or both (a null keeps the value).
UPDATE tenants SET timezone = coalesce(sqlc.narg(timezone), timezone), locale = coalesce(sqlc.narg(locale), locale)
WHERE id = sqlc.arg(id)
RETURNING timezone, locale;

-- name: TenantStripeAccount :one
SELECT coalesce(stripe_account, '')::text FROM tenants WHERE id = $1;

-- name: SetTenantStripeAccount :execrows
UPDATE tenants SET stripe_account = sqlc.narg(stripe_account) WHERE id = $1;

-- name: TenantTwilioSender :one
SELECT coalesce(twilio_from, '')::text AS twilio_from, coalesce(twilio_messaging_service, '')::text AS twilio_messaging_service
FROM tenants WHERE id = $1;

-- name: SetTenantTwilioSender :execrows
UPDATE tenants SET twilio_from = sqlc.narg(twilio_from), twilio_messaging_service = sqlc.narg(twilio_messaging_service)
WHERE id = $1;

-- name: TenantCallerConfirmation :one
SELECT caller_confirmation FROM tenants WHERE id = $1;

-- name: SetTenantCallerConfirmation :execrows
UPDATE tenants SET caller_confirmation = $2 WHERE id = $1;
