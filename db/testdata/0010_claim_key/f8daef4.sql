-- The start of a local operation's one statement (db.Local): it reports
-- whether the key is free. A key already taken (a replay) answers at once;
-- otherwise it first waits for any concurrent attempt of the same key in
-- another such statement, at most the shorter of claim_wait and the
-- connection's lock_timeout. The wait is on an advisory lock of the key's
-- hash (its text starts with "idempotency-key/", apart from the scheduler's
-- locks of a resource), held until the statement's transaction ends, so attempts
-- of one key wait for each other before either writes; the key's unique
-- index stays the only guarantee. A lock timeout raised here names this
-- function in its context, which tells it from a lock timeout of the
-- operation's writes. The check of the key runs after the wait with a
-- snapshot of its own, so it sees an attempt that committed meanwhile.
CREATE FUNCTION oncecall_key_free(tenant uuid, key text, claim_wait text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    conn_wait text := current_setting('lock_timeout');
BEGIN
    IF EXISTS (SELECT 1 FROM actions a WHERE a.tenant_id = tenant AND a.idempotency_key = key) THEN
        RETURN false;
    END IF;
    IF conn_wait::interval = '0' OR conn_wait::interval > claim_wait::interval THEN
        PERFORM set_config('lock_timeout', claim_wait, true);
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('idempotency-key/' || tenant::text || '/' || key, 0));
    PERFORM set_config('lock_timeout', conn_wait, true);
    RETURN NOT EXISTS (SELECT 1 FROM actions a WHERE a.tenant_id = tenant AND a.idempotency_key = key);
END
$$;

-- An appointment as oncecall's answers write it (db.Appointment's JSON),
-- for local operations whose answer is built in SQL.
CREATE FUNCTION oncecall_appointment(id uuid, customer_id uuid, slot_id uuid, service text, status text,
                                     starts_at timestamptz, ends_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT '{"id":' || to_json(id) || ',"customer_id":' || to_json(customer_id) ||
             ',"slot_id":' || to_json(slot_id) || ',"service":' || to_json(service) ||
             ',"status":' || to_json(status) || ',"starts_at":' || to_json(oncecall_time(starts_at)) ||
             ',"ends_at":' || to_json(oncecall_time(ends_at)) || '}' $$;

-- A customer as oncecall's answers write it (db.Customer's JSON: empty
-- contact fields left out).
CREATE FUNCTION oncecall_customer(id uuid, name text, phone text, email text, external_ref text, points bigint,
                                  created_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT '{"id":' || to_json(id) || ',"name":' || to_json(name) ||
             COALESCE(',"phone":' || to_json(NULLIF(phone, '')), '') ||
             COALESCE(',"email":' || to_json(NULLIF(email, '')), '') ||
             COALESCE(',"external_ref":' || to_json(NULLIF(external_ref, '')), '') ||
             ',"points":' || points || ',"created_at":' || to_json(oncecall_time(created_at)) || '}' $$;
