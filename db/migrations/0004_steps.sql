-- The step ledger: each remote write of an action, with the provider key that
-- is committed before the first dispatch and reused by every retry and by
-- recovery; and the timeline of what happened to each action.

CREATE TABLE action_steps (
    action_id     uuid NOT NULL REFERENCES actions (id) ON DELETE CASCADE,
    name          text NOT NULL,
    seq           integer NOT NULL,
    capability    text NOT NULL,
    -- required steps decide the action's outcome; the others (a confirmation
    -- message after a booking) are resumed but never change it.
    required      boolean NOT NULL,
    operation     text NOT NULL,
    provider_key  text NOT NULL,
    external_ref  text NOT NULL,
    payload       jsonb NOT NULL,
    -- pending: certainly not performed yet; unknown: may have been performed.
    state         text NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'unknown', 'succeeded', 'rejected')),
    provider_ref  text,
    reject_code   text,
    attempts      integer NOT NULL DEFAULT 0,
    checks        integer NOT NULL DEFAULT 0,
    last_error    text,
    last_sent_at  timestamptz,
    next_check_at timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (action_id, name)
);
CREATE INDEX action_steps_open ON action_steps (next_check_at) WHERE state IN ('pending', 'unknown');

CREATE TABLE action_events (
    id        bigserial PRIMARY KEY,
    action_id uuid NOT NULL REFERENCES actions (id) ON DELETE CASCADE,
    at        timestamptz NOT NULL DEFAULT now(),
    kind      text NOT NULL,
    step      text,
    detail    jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX action_events_action ON action_events (action_id, id);

-- Operator queue.
CREATE INDEX actions_needs_operator ON actions (created_at) WHERE needs_operator;
