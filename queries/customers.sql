-- name: CreateCustomer :one
INSERT INTO customers (id, tenant_id, name, phone, email, external_ref)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: CustomerByID :one
SELECT * FROM customers WHERE tenant_id = $1 AND id = $2;

-- name: CustomerExists :one
SELECT EXISTS (SELECT 1 FROM customers WHERE tenant_id = $1 AND id = $2);

-- name: CustomerByExternalRef :one
SELECT * FROM customers WHERE tenant_id = $1 AND external_ref = $2;

-- name: CustomerByPhone :one
SELECT * FROM customers WHERE tenant_id = $1 AND phone = $2;

-- name: UpdateCustomer :one
-- Sets the fields whose set_ flag is true; a NULL value clears a field.
UPDATE customers
SET name         = CASE WHEN sqlc.arg(set_name)::boolean THEN sqlc.arg(name)::text ELSE name END,
    phone        = CASE WHEN sqlc.arg(set_phone)::boolean THEN sqlc.narg(phone)::text ELSE phone END,
    email        = CASE WHEN sqlc.arg(set_email)::boolean THEN sqlc.narg(email)::text ELSE email END,
    external_ref = CASE WHEN sqlc.arg(set_external_ref)::boolean THEN sqlc.narg(external_ref)::text ELSE external_ref END,
    updated_at   = now()
WHERE tenant_id = sqlc.arg(tenant_id) AND id = sqlc.arg(id)
RETURNING *;

-- name: AppendCustomerNote :one
INSERT INTO customer_notes (id, tenant_id, customer_id, text, action_id)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: AddPoints :one
-- Changes the balance in one statement that cannot take it below zero, and
-- records the change with the balance it produced. No row: the customer is
-- missing or the balance is too small.
WITH c AS (
    UPDATE customers
    SET points = points + sqlc.arg(delta), updated_at = now()
    WHERE customers.tenant_id = sqlc.arg(tenant_id) AND customers.id = sqlc.arg(customer_id)
      AND points + sqlc.arg(delta) >= 0
    RETURNING customers.id, customers.points
)
INSERT INTO points_ledger (id, tenant_id, customer_id, delta, reason, balance_after, action_id)
SELECT sqlc.arg(id), sqlc.arg(tenant_id), c.id, sqlc.arg(delta), sqlc.arg(reason), c.points, sqlc.arg(action_id)
FROM c
RETURNING *;
