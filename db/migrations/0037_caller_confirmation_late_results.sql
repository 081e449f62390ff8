-- The confirmation gate: when set, a voice tool call that books, moves or
-- cancels an appointment or charges a payment is refused
-- (needs_caller_confirmation, nothing claimed) unless it carries the caller's
-- confirmation echoing the time or the amount. Off by default; set with
-- `oncecall tenant update --caller-confirmation on|off`.
ALTER TABLE tenants ADD COLUMN caller_confirmation boolean NOT NULL DEFAULT false;

-- Late results: a Vapi tool call answered pending registers the call's
-- control URL (Live Call Control), and oncecall adds the settled answer to
-- the conversation once the action settles, unless the call has ended
-- first. One row per action: the one delivery of its result.
CREATE TABLE late_results (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    action_id     uuid NOT NULL,
    call_platform text NOT NULL,
    call_id       text NOT NULL,
    control_url   text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    call_ended_at timestamptz,
    delivered_at  timestamptz,
    PRIMARY KEY (tenant_id, action_id),
    FOREIGN KEY (tenant_id, action_id) REFERENCES actions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX late_results_call ON late_results (tenant_id, call_platform, call_id);
