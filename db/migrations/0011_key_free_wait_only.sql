-- oncecall_key_free without its own first look at the key: every statement
-- that calls it reads the key's action first and calls it only when that
-- read found none (a replay is answered from the read), so the look was
-- the same index lookup done twice on every first execution. What is left
-- is the wait: for a concurrent attempt of the same key in another such
-- statement, at most the shorter of claim_wait and the connection's
-- lock_timeout, on a transaction advisory lock of the key's hash (its text
-- starts with "idempotency-key/"), then a check of the key with a snapshot
-- of its own, which sees an attempt that committed meanwhile. A lock
-- timeout raised here still names this function in its context. (A caller
-- that does not read first still gets the right answer, after the wait.)
CREATE OR REPLACE FUNCTION oncecall_key_free(tenant uuid, key text, claim_wait text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    conn_wait text := current_setting('lock_timeout');
BEGIN
    IF conn_wait::interval = '0' OR conn_wait::interval > claim_wait::interval THEN
        PERFORM set_config('lock_timeout', claim_wait, true);
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('idempotency-key/' || tenant::text || '/' || key, 0));
    PERFORM set_config('lock_timeout', conn_wait, true);
    RETURN NOT EXISTS (SELECT 1 FROM actions a WHERE a.tenant_id = tenant AND a.idempotency_key = key);
END
$$;
