-- What each caller heard: every answer a voice tool call was given about an
-- action (its outcome, the say the agent was given, the reason and what
-- changed since, when), with the platform, the call and the tool. The
-- console shows them in order on the action's page beside what is true now,
-- and a follow-up call names what changed since the caller was told
-- (docs/console.md#what-the-caller-heard).
--
-- A row is written after the answer is settled, outside the claim's
-- transaction, one INSERT per voice answer about an action; it goes with
-- its action when the action is pruned. A new, empty table: no lock on a
-- table in use.
CREATE TABLE action_answers (
    tenant_id uuid NOT NULL,
    id        bigserial,
    action_id uuid NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    platform  text NOT NULL,
    call_id   text NOT NULL DEFAULT '',
    tool      text NOT NULL,
    outcome   text NOT NULL,
    reason    text NOT NULL DEFAULT '',
    current   text NOT NULL DEFAULT '',
    say       text NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, action_id) REFERENCES actions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX action_answers_action ON action_answers (tenant_id, action_id, id);
