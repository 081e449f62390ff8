-- name: CreateMessage :one
INSERT INTO messages (id, tenant_id, customer_id, recipient, channel, template, subject_line, body,
                      subject_id, send_ref, action_id, template_version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
RETURNING *;

-- name: MessageByID :one
SELECT * FROM messages WHERE tenant_id = $1 AND id = $2;

-- name: MessageOfAction :one
-- The outbox row a step of an action wrote (the local provider's send).
SELECT * FROM messages WHERE tenant_id = $1 AND action_id = $2 ORDER BY created_at LIMIT 1;
