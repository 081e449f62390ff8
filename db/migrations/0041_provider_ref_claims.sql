-- A provider's write found by a search (a provider that keeps no keys) is
-- recorded by the step that claims its reference first: the primary key
-- decides, where drivers took turns on an advisory lock before. A second
-- driver's claim waits for the first's transaction and then finds it
-- taken; a claim rolled back with its transaction leaves nothing. A claim
-- goes with its action when retention deletes it.
--
-- It is a global table (the reference is the provider's, across tenants):
-- under Citus a reference table, or distributed by provider_ref
-- (docs/scaling.md).
CREATE TABLE provider_ref_claims (
    capability   text NOT NULL,
    provider_ref text NOT NULL,
    tenant_id    uuid NOT NULL,
    action_id    uuid NOT NULL,
    step         text NOT NULL,
    PRIMARY KEY (capability, provider_ref),
    FOREIGN KEY (tenant_id, action_id) REFERENCES actions (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX provider_ref_claims_action ON provider_ref_claims (tenant_id, action_id);
