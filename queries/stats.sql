-- Counts for the metrics endpoint. Both are cheap on a large table: the
-- first reads only unfinished actions (partial index actions_unfinished),
-- the second reads the statistics collector's row estimate.

-- name: UnfinishedActionCounts :many
SELECT state, count(*) AS actions, count(*) FILTER (WHERE needs_operator) AS needs_operator
FROM actions
WHERE state <> 'completed'
GROUP BY state;

-- name: ActionRowEstimate :one
SELECT pg_stat_get_live_tuples('actions'::regclass)::bigint AS estimate;
