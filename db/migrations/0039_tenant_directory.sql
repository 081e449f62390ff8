-- The directory of tenants across clusters (docs/scaling.md#tenants-across-clusters):
-- which cluster each tenant lives on, and until when its requests are paused
-- while it moves. It is read in the home cluster only; every cluster has the
-- table, empty, because every cluster runs the same migrations. A tenant
-- without a row lives in the home cluster. No foreign key: the tenant's row is
-- in the cluster it lives on, not necessarily this one.
CREATE TABLE tenant_directory (
    tenant_id    uuid PRIMARY KEY,
    cluster      text NOT NULL DEFAULT '' CHECK (length(cluster) <= 63),
    paused_until timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
