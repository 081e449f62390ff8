-- name: CreateTemplate :one
-- Version 1 of a new template; no row when the tenant already has one of
-- that name.
INSERT INTO message_templates (tenant_id, name, version, subject, body, required, optional, action_id)
VALUES ($1, $2, 1, $3, $4, $5, $6, $7)
ON CONFLICT (tenant_id, name, version) DO NOTHING
RETURNING *;

-- name: LockTemplate :one
-- Serialises the updates of one template: each holds its version 1 row
-- until its transaction ends, so the next one's AddTemplateVersion, a new
-- statement, sees the version it added.
SELECT version FROM message_templates
WHERE tenant_id = $1 AND name = $2 AND version = 1
FOR UPDATE;

-- name: AddTemplateVersion :one
-- The next version of an existing template (after LockTemplate); no row
-- when there is none.
INSERT INTO message_templates (tenant_id, name, version, subject, body, required, optional, action_id)
SELECT $1, $2, max(version) + 1, $3, $4, $5, $6, $7
FROM message_templates WHERE tenant_id = $1 AND name = $2
HAVING count(*) > 0
RETURNING *;

-- name: LatestTemplate :one
SELECT * FROM message_templates
WHERE tenant_id = $1 AND name = $2
ORDER BY version DESC
LIMIT 1;

-- name: LatestTemplates :many
-- The newest version of each of the tenant's templates, by name.
SELECT DISTINCT ON (name) * FROM message_templates
WHERE tenant_id = $1
ORDER BY name, version DESC;
