-- The trace context of the request that claimed a remote action: its W3C
-- trace id (16 bytes), span id (8) and trace flags (1), kept only when
-- that request was traced and sampled. The reconciler's span over the
-- action links to that request's span, minutes later, in a trace of its
-- own (docs/observability.md). NULL otherwise: an untraced action, and
-- every local one (it settles in its request), stores nothing. Adding a
-- nullable column without a default rewrites nothing.
ALTER TABLE actions ADD COLUMN trace_context bytea;
