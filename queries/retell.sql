-- name: RetellKey :one
SELECT api_key FROM retell_keys WHERE tenant_id = $1;

-- name: SetRetellKey :exec
INSERT INTO retell_keys (tenant_id, api_key) VALUES ($1, $2)
ON CONFLICT (tenant_id) DO UPDATE SET api_key = EXCLUDED.api_key, created_at = now();

-- name: DeleteRetellKey :execrows
DELETE FROM retell_keys WHERE tenant_id = $1;
