-- A time as oncecall's answers write it (RFC 3339 in UTC, fractional seconds
-- only when there are any), for local operations whose answer is built in
-- SQL in the claim's round trip: the same text Go's encoding/json writes.
CREATE FUNCTION oncecall_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$ SELECT rtrim(rtrim(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z' $$;
