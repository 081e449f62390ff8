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
