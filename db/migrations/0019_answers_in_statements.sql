-- The one statement of each local operation (queries/*.sql, ClaimAnd...)
-- writes its answer's JSON in its own text, which ships in the binary, so
-- a change of an answer's fields needs no migration. These functions built
-- that JSON (0009, 0010, restated by 0012) or inserted the completed action
-- (oncecall_complete, unused since the statements insert it themselves);
-- nothing calls them any more. oncecall_key_free (0011) stays: every such
-- statement waits for its key in it.
DROP FUNCTION IF EXISTS oncecall_complete(uuid, uuid, text, text, text, jsonb, text, text, text, integer, text, text);
DROP FUNCTION IF EXISTS oncecall_customer(uuid, text, text, text, text, bigint, timestamptz);
DROP FUNCTION IF EXISTS oncecall_appointment(uuid, uuid, uuid, text, text, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS oncecall_time(timestamptz);
