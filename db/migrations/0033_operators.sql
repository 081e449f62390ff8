-- Named staff of the operator console (docs/console.md): people with a role,
-- optionally limited to one tenant; their one-time sign-in links and their
-- sessions, kept here so that signing out or an admin ends a session on
-- every replica at once; the audit trail of what each of them did; and the
-- follow-up calls they marked done.
--
-- The tables are new and empty: creating them locks nothing in use.

-- A person. email is stored lower-cased. password_hash is a bcrypt hash, or
-- NULL for a person who signs in through the identity provider or has not
-- used their sign-in link yet. tenant_id NULL: every tenant. A person is
-- disabled, never deleted, so that the audit trail keeps naming them.
CREATE TABLE operators (
    id            uuid PRIMARY KEY,
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    email         text NOT NULL CHECK (length(email) BETWEEN 3 AND 254 AND email = lower(email)),
    role          text NOT NULL CHECK (role IN ('viewer', 'resolver', 'admin')),
    tenant_id     uuid REFERENCES tenants (id),
    password_hash text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    disabled_at   timestamptz
);
CREATE UNIQUE INDEX operators_email ON operators (email);

-- One-time sign-in links: only the SHA-256 of the link's secret is kept.
CREATE TABLE operator_links (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    operator_id uuid NOT NULL REFERENCES operators (id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX operator_links_operator ON operator_links (operator_id);

-- Sessions: the cookie holds a random secret, this table its SHA-256. A
-- session is valid while it is neither expired nor revoked and its person
-- is not disabled. operator_id NULL: a break-glass session opened with the
-- shared operator token, under the name its holder typed.
CREATE TABLE operator_sessions (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    id          uuid NOT NULL UNIQUE,
    operator_id uuid REFERENCES operators (id),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    via         text NOT NULL CHECK (via IN ('password', 'link', 'oidc', 'break-glass')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator_id, created_at)
    WHERE operator_id IS NOT NULL;

-- The audit trail: every resolution, retry, note, follow-up and change of
-- staff, with who did it. operator_id is the person (NULL for break-glass,
-- the operator API and the command line, which name themselves in
-- operator_name and via). No foreign keys: a row outlives the action it
-- names (actions are pruned after ACTION_RETENTION) and is never changed.
CREATE TABLE operator_audit (
    id            bigserial PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    operator_id   uuid,
    operator_name text NOT NULL,
    via           text NOT NULL,
    tenant_id     uuid,
    action_id     uuid,
    kind          text NOT NULL,
    detail        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX operator_audit_at ON operator_audit (at, id);
CREATE INDEX operator_audit_tenant ON operator_audit (tenant_id, at, id) WHERE tenant_id IS NOT NULL;
CREATE INDEX operator_audit_action ON operator_audit (action_id, id) WHERE action_id IS NOT NULL;
CREATE INDEX operator_audit_operator ON operator_audit (operator_id, at) WHERE operator_id IS NOT NULL;

-- Follow-up calls marked done: a caller an action left waiting for a
-- person (needs_operator), or a callback the caller requested
-- (request_callback). subject_id is the action's or the callback's id.
CREATE TABLE follow_ups_done (
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    kind          text NOT NULL CHECK (kind IN ('action', 'callback')),
    subject_id    uuid NOT NULL,
    operator_id   uuid,
    operator_name text NOT NULL,
    via           text NOT NULL,
    note          text NOT NULL CHECK (length(note) BETWEEN 1 AND 2000),
    done_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, kind, subject_id)
);
CREATE INDEX follow_ups_done_at ON follow_ups_done (tenant_id, done_at);
