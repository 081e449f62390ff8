-- Tenant message templates (versioned), the template version a message was
-- rendered from, API key scopes, and the Dasha call that claimed an action.

-- Every version of every tenant template. A version is never changed: an
-- update adds the next one, and a message keeps the version it used.
-- subject is the e-mail subject line's template (NULL: the template cannot
-- be sent by e-mail); body is the text of every channel.
CREATE TABLE message_templates (
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    name       text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]{0,63}$'),
    version    integer NOT NULL CHECK (version >= 1),
    subject    text CHECK (length(subject) BETWEEN 1 AND 200),
    body       text NOT NULL CHECK (length(body) BETWEEN 1 AND 2000),
    required   text[] NOT NULL DEFAULT '{}',
    optional   text[] NOT NULL DEFAULT '{}',
    action_id  uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name, version)
);

-- NULL: rendered from a built-in template.
ALTER TABLE messages ADD COLUMN template_version integer CHECK (template_version >= 1);

-- full: every /v1 route; dasha: only the Dasha webhooks (tools and events).
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'dasha'));

-- The Dasha callId of the tool call that claimed the action, so that the
-- call's Completed or Failed event can hurry its unfinished actions along.
ALTER TABLE actions ADD COLUMN call_id text CHECK (length(call_id) BETWEEN 1 AND 200);
CREATE INDEX actions_unfinished_call ON actions (tenant_id, call_id)
    WHERE call_id IS NOT NULL AND state <> 'completed';
