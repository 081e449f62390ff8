-- Completed actions that still hold a replayable body, by age: the pruner
-- clears those bodies after RESPONSE_RETENTION without walking the (much
-- larger) set of older actions whose bodies are already gone.
CREATE INDEX actions_result_completed_at ON actions (completed_at)
    WHERE state = 'completed' AND result IS NOT NULL;
