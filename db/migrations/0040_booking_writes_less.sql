-- A booking writes less (docs/performance.md#what-a-booking-writes), with
-- every guarantee kept:
--
--   * appointments_customer_active (tenant_id, customer_id) WHERE status =
--     'active' holds a subset of appointments_customer's entries, in the same
--     order: a customer's active appointments are found through
--     appointments_customer and filtered by status (a customer has few).
--     Each booking inserted an entry into both. Nothing unique is dropped.
--   * appointments_tenant_id_fkey is implied by appointments_customer_id_fkey:
--     customer_id is NOT NULL, (tenant_id, customer_id) must name a customer,
--     and a customer's tenant_id must name a tenant (customers_tenant_id_fkey).
--     Each booking checked it with a query of its own.
DROP INDEX appointments_customer_active;
ALTER TABLE appointments DROP CONSTRAINT appointments_tenant_id_fkey;
