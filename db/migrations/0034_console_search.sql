-- The operator console's search (docs/console.md#search): by what a person
-- knows (a customer's phone, e-mail or name, an action id, a voice call's
-- id, an idempotency key or its key_hash, a provider's reference), every
-- lookup an index probe, so that a search stays fast with millions of
-- actions. An action id is the primary key; a provider's reference is
-- action_steps_provider_ref (migration 0026).
--
-- action_search_terms lists what an action can be found by, each term
-- prefixed by its kind:
--   s:<value>  what the request names: a customer, appointment, payment
--              intent or callback id, a phone number or e-mail address
--              (to, phone, email), and the record the action made
--              (resource_id); a customer's charge names her payment intent,
--              not her, and is found through it;
--   c:<id>     the voice call (any platform's id);
--   k:<hash>   the key_hash the logs print for its idempotency key: the
--              first 12 hex digits of the key's SHA-256, the same once the
--              key is retired (<key>~<action id>).
-- It is IMMUTABLE: it reads only its arguments. (convert_to is marked
-- STABLE because it depends on the database's encoding, which never
-- changes for a database.)
CREATE OR REPLACE FUNCTION action_search_terms(request jsonb, call_id text, idempotency_key text, resource_id text)
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_remove(ARRAY[
        's:' || nullif(request->>'customer_id', ''),
        's:' || nullif(request->>'appointment_id', ''),
        's:' || nullif(request->>'payment_intent_id', ''),
        's:' || nullif(request->>'callback_id', ''),
        's:' || nullif(request->>'phone', ''),
        's:' || nullif(request->>'to', ''),
        's:' || nullif(request->>'email', ''),
        's:' || nullif(resource_id, ''),
        'c:' || call_id,
        'k:' || left(encode(sha256(convert_to(regexp_replace(idempotency_key, '~[0-9a-f-]{36}$', ''), 'UTF8')), 'hex'), 12)
    ], NULL)
$$;

-- One GIN index holds every term of every action. GIN's pending list
-- (fastupdate) batches the index's inserts, so a claim pays little for it.
-- The terms are globally distinct (ids, phone numbers, hashes); a search
-- names the tenants it reads and filters by them.
--
-- A plain CREATE INDEX in the migration's transaction: it holds a SHARE
-- lock on actions while it builds, so actions are read but not written
-- meanwhile (39 s for a million actions on a busy 2-core machine). A large
-- database builds it first without that lock, by hand, and the migration
-- then finds it (IF NOT EXISTS): docs/migrations.md#indexes-and-the-locks-they-take.
CREATE INDEX IF NOT EXISTS actions_search ON actions USING gin (action_search_terms(request, call_id, idempotency_key, resource_id));

-- A customer by e-mail address (stored lower-cased) and by the words of her
-- name ("mar lop" finds Maria Lopez: each word a prefix of one of hers).
-- By phone: customers_phone (migration 0002).
CREATE INDEX customers_email ON customers (tenant_id, email) WHERE email IS NOT NULL;
CREATE INDEX customers_name_words ON customers USING gin (to_tsvector('simple', name));

-- A customer's appointments, cancelled ones too: their reschedules and
-- cancellations name the appointment.
CREATE INDEX appointments_customer ON appointments (tenant_id, customer_id);

-- The follow-up calls to make (the console's tasks): callbacks still
-- requested, by the end of their window.
CREATE INDEX callbacks_requested ON callbacks (tenant_id, window_end) WHERE status = 'requested';
