-- A booking writes two index entries fewer (docs/performance.md#what-a-booking-writes),
-- every guarantee kept:
--
--   * appointments_tenant (tenant_id, created_at), from 0002, is read by no
--     query: a tenant's appointments are found through its primary key
--     (tenant_id, id) or appointments_customer, and none is listed by
--     creation time. db.TestStatementsReadByIndex finds such indexes.
--   * appointments_id (id), from 0035, served lookups of an appointment by
--     its id alone; every query of appointments names the tenant, and the
--     primary key (tenant_id, id) answers them.
--
-- Neither is unique. Dropping an index takes an ACCESS EXCLUSIVE lock on
-- appointments for a moment (docs/migrations.md).
DROP INDEX appointments_tenant;
DROP INDEX appointments_id;
