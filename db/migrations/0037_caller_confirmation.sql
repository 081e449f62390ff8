-- The confirmation gate: when set, a voice tool call that books, moves or
-- cancels an appointment or charges a payment is refused
-- (needs_caller_confirmation, nothing claimed) unless it carries the caller's
-- confirmation echoing the time or the amount. Off by default; set with
-- `oncecall tenant update --caller-confirmation on|off`.
ALTER TABLE tenants ADD COLUMN caller_confirmation boolean NOT NULL DEFAULT false;
