-- A step's provider reference, looked up by ProviderRefHeld (queries/steps.sql):
-- before a driver records a write it found by a search (providers without
-- keys), it checks that no other step of the capability holds that
-- reference. Without this index the check reads the whole of action_steps,
-- which grows with every remote write. Steps without a reference (most
-- pending ones, and writes that give none back) are left out: the lookup
-- is by equality, so it never looks for them.
--
-- A plain CREATE INDEX, in the migration's transaction: it holds a SHARE
-- lock on action_steps while it builds, so steps are read but not written
-- meanwhile (docs/migrations.md#indexes-and-the-locks-they-take).
CREATE INDEX action_steps_provider_ref ON action_steps (provider_ref, capability)
    WHERE provider_ref IS NOT NULL;
