-- 0010_claim_key.sql was edited after it first shipped, and a database
-- records only that a version was applied: one migrated by an earlier build
-- kept that build's 0010 (without oncecall_customer or oncecall_complete,
-- with oncecall_appointment missing, or with the key's lock on another
-- hash). This restates the final definition of every function 0010 defines,
-- so every database has the same ones whichever 0010 it ran.
-- oncecall_key_free's final definition is 0011's, applied after any 0010.
-- Released migrations are never edited again: db/migrations/checksums
-- records each file's checksum, and schema_migrations the one applied.

CREATE OR REPLACE FUNCTION oncecall_appointment(id uuid, customer_id uuid, slot_id uuid, service text, status text,
                                                starts_at timestamptz, ends_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT '{"id":' || to_json(id) || ',"customer_id":' || to_json(customer_id) ||
             ',"slot_id":' || to_json(slot_id) || ',"service":' || to_json(service) ||
             ',"status":' || to_json(status) || ',"starts_at":' || to_json(oncecall_time(starts_at)) ||
             ',"ends_at":' || to_json(oncecall_time(ends_at)) || '}' $$;

CREATE OR REPLACE FUNCTION oncecall_customer(id uuid, name text, phone text, email text, external_ref text,
                                             points bigint, created_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT '{"id":' || to_json(id) || ',"name":' || to_json(name) ||
             COALESCE(',"phone":' || to_json(NULLIF(phone, '')), '') ||
             COALESCE(',"email":' || to_json(NULLIF(email, '')), '') ||
             COALESCE(',"external_ref":' || to_json(NULLIF(external_ref, '')), '') ||
             ',"points":' || points || ',"created_at":' || to_json(oncecall_time(created_at)) || '}' $$;

CREATE OR REPLACE FUNCTION oncecall_complete(id uuid, tenant uuid, key text, operation text, fingerprint text,
                                             request jsonb, call_id text, outcome text, reason text,
                                             http_status integer, resource_id text, body text) RETURNS SETOF actions
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY
    INSERT INTO actions AS a (id, tenant_id, idempotency_key, operation, fingerprint, request, call_id,
                              state, outcome, reason, http_status, resource_id, result, completed_at)
    VALUES (id, tenant, key, operation, fingerprint, request, call_id,
            'completed', outcome, reason, http_status, resource_id, convert_to(body, 'UTF8'), now())
    RETURNING a.*;
END
$$;
