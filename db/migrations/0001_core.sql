-- Tenants, their API keys, and the idempotency record of every action.

CREATE TABLE tenants (
    id           uuid PRIMARY KEY,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    dasha_org_id text,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored only as SHA-256 hashes; prefix is the first characters
-- of the key, kept so an operator can tell keys apart.
CREATE TABLE api_keys (
    key_hash   bytea PRIMARY KEY CHECK (length(key_hash) = 32),
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    prefix     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

-- One row per confirmed intent. The row is claimed with
-- INSERT ... ON CONFLICT (tenant_id, idempotency_key) DO NOTHING.
-- result holds the replayable body and is pruned after RESPONSE_RETENTION;
-- the rest is the compact action, kept for ACTION_RETENTION.
CREATE TABLE actions (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    operation       text NOT NULL,
    fingerprint     text NOT NULL,
    request         jsonb NOT NULL,
    state           text NOT NULL DEFAULT 'running'
                    CHECK (state IN ('running', 'completed', 'unknown')),
    needs_operator  boolean NOT NULL DEFAULT false,
    outcome         text CHECK (outcome IN ('confirmed', 'rejected', 'pending')),
    reason          text,
    http_status     integer,
    resource_id     text,
    result          bytea,
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    UNIQUE (tenant_id, idempotency_key),
    CHECK ((state = 'completed') = (outcome IN ('confirmed', 'rejected')))
);
-- Unfinished actions, for the reconciler.
CREATE INDEX actions_unfinished ON actions (lease_until) WHERE state <> 'completed';
-- Finished actions by age, for the pruner.
CREATE INDEX actions_completed_at ON actions (completed_at) WHERE state = 'completed';
