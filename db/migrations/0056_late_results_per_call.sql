-- Late results reach every call that waits: each call that heard pending
-- for an action is its own subscriber (one row per action and call), with
-- the tool the call asked about in its own words (the booking's tool, not
-- check_action_status, when the call asked the status tool) and the
-- control URL its platform takes a late result on. A settlement queues one
-- River job (river_job, kind late_result) per live subscriber in its own
-- transaction; a call that ended is marked and never gets one.
ALTER TABLE late_results ADD COLUMN tool text NOT NULL DEFAULT '';
ALTER TABLE late_results DROP CONSTRAINT late_results_pkey;
ALTER TABLE late_results ADD PRIMARY KEY (tenant_id, action_id, call_platform, call_id);
