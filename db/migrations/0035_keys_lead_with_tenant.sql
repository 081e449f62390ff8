-- Every primary key and unique index of a per-tenant table leads with
-- tenant_id (docs/scaling.md#a-citus-ready-schema), so that the schema can be
-- distributed by tenant_id (Citus enforces a unique index on a shard only
-- when it includes the distribution column) and a tenant's rows can be
-- copied to another cluster by their keys alone.
--
--   * The tables keyed by id alone get the primary key (tenant_id, id) and a
--     plain index on id, which the lookups by id alone (the step driver's,
--     the reconciler's, the console's) keep using. The unique (tenant_id, id)
--     constraints some of them had for composite foreign keys are now the
--     primary key and are dropped.
--   * Every foreign key to one of them names tenant_id too: a row can only
--     point at a row of its own tenant.
--   * appointments_one_per_slot and payments_one_success_per_intent keep
--     their names and lead with tenant_id; the ON CONFLICT clauses that
--     name them change with this migration.
--   * action_steps and action_events, which had no tenant_id, get one, filled
--     from the action, by a trigger when a statement does not name it.
--   * calendar_connections.id is unique with tenant_id (its primary key is
--     tenant_id alone, so a plain index on id serves its lookups).
--   * practitioner_locations and practitioner_services lead their keys with
--     tenant_id.
--
-- It rebuilds these indexes under the tables' ACCESS EXCLUSIVE locks: on a
-- large database run `oncecall migrate` in a quiet window (docs/migrations.md).

-- The foreign keys that point at the keys being replaced.
ALTER TABLE action_steps          DROP CONSTRAINT action_steps_action_id_fkey;
ALTER TABLE action_events         DROP CONSTRAINT action_events_action_id_fkey;
ALTER TABLE appointments          DROP CONSTRAINT appointments_customer_id_fkey;
ALTER TABLE appointments          DROP CONSTRAINT appointments_slot_id_fkey;
ALTER TABLE appointments          DROP CONSTRAINT appointments_service;
ALTER TABLE calendar_appointments DROP CONSTRAINT calendar_appointments_slot_id_fkey;
ALTER TABLE calendar_appointments DROP CONSTRAINT calendar_appointments_tenant_id_customer_id_fkey;
ALTER TABLE calendar_appointments DROP CONSTRAINT calendar_appointments_tenant_id_location_id_fkey;
ALTER TABLE calendar_appointments DROP CONSTRAINT calendar_appointments_tenant_id_practitioner_id_fkey;
ALTER TABLE payment_intents       DROP CONSTRAINT payment_intents_tenant_id_customer_id_fkey;
ALTER TABLE messages              DROP CONSTRAINT messages_tenant_id_customer_id_fkey;
ALTER TABLE customer_notes        DROP CONSTRAINT customer_notes_tenant_id_customer_id_fkey;
ALTER TABLE points_ledger         DROP CONSTRAINT points_ledger_tenant_id_customer_id_fkey;
ALTER TABLE callbacks             DROP CONSTRAINT callbacks_tenant_id_customer_id_fkey;
ALTER TABLE payments              DROP CONSTRAINT payments_tenant_id_intent_id_fkey;
ALTER TABLE slots                 DROP CONSTRAINT slots_location;
ALTER TABLE slots                 DROP CONSTRAINT slots_practitioner;
ALTER TABLE practitioner_locations DROP CONSTRAINT practitioner_locations_tenant_id_location_id_fkey;
ALTER TABLE practitioner_locations DROP CONSTRAINT practitioner_locations_tenant_id_practitioner_id_fkey;
ALTER TABLE practitioner_services DROP CONSTRAINT practitioner_services_tenant_id_practitioner_id_fkey;
ALTER TABLE practitioner_services DROP CONSTRAINT practitioner_services_tenant_id_service_id_fkey;
ALTER TABLE calendar_mappings     DROP CONSTRAINT calendar_mappings_tenant_id_location_id_fkey;
ALTER TABLE calendar_mappings     DROP CONSTRAINT calendar_mappings_tenant_id_practitioner_id_fkey;

-- The keys: (tenant_id, id), and id indexed on its own.
ALTER TABLE customers       DROP CONSTRAINT customers_tenant_id_id;
ALTER TABLE payment_intents DROP CONSTRAINT payment_intents_tenant_id_id_key;
ALTER TABLE locations       DROP CONSTRAINT locations_tenant_id_id_key;
ALTER TABLE practitioners   DROP CONSTRAINT practitioners_tenant_id_id_key;
ALTER TABLE services        DROP CONSTRAINT services_tenant_id_id_key;

ALTER TABLE actions         DROP CONSTRAINT actions_pkey,         ADD CONSTRAINT actions_pkey         PRIMARY KEY (tenant_id, id);
ALTER TABLE appointments    DROP CONSTRAINT appointments_pkey,    ADD CONSTRAINT appointments_pkey    PRIMARY KEY (tenant_id, id);
ALTER TABLE callbacks       DROP CONSTRAINT callbacks_pkey,       ADD CONSTRAINT callbacks_pkey       PRIMARY KEY (tenant_id, id);
ALTER TABLE customer_notes  DROP CONSTRAINT customer_notes_pkey,  ADD CONSTRAINT customer_notes_pkey  PRIMARY KEY (tenant_id, id);
ALTER TABLE customers       DROP CONSTRAINT customers_pkey,       ADD CONSTRAINT customers_pkey       PRIMARY KEY (tenant_id, id);
ALTER TABLE locations       DROP CONSTRAINT locations_pkey,       ADD CONSTRAINT locations_pkey       PRIMARY KEY (tenant_id, id);
ALTER TABLE messages        DROP CONSTRAINT messages_pkey,        ADD CONSTRAINT messages_pkey        PRIMARY KEY (tenant_id, id);
ALTER TABLE payment_intents DROP CONSTRAINT payment_intents_pkey, ADD CONSTRAINT payment_intents_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE payments        DROP CONSTRAINT payments_pkey,        ADD CONSTRAINT payments_pkey        PRIMARY KEY (tenant_id, id);
ALTER TABLE points_ledger   DROP CONSTRAINT points_ledger_pkey,   ADD CONSTRAINT points_ledger_pkey   PRIMARY KEY (tenant_id, id);
ALTER TABLE practitioners   DROP CONSTRAINT practitioners_pkey,   ADD CONSTRAINT practitioners_pkey   PRIMARY KEY (tenant_id, id);
ALTER TABLE services        DROP CONSTRAINT services_pkey,        ADD CONSTRAINT services_pkey        PRIMARY KEY (tenant_id, id);
ALTER TABLE slots           DROP CONSTRAINT slots_pkey,           ADD CONSTRAINT slots_pkey           PRIMARY KEY (tenant_id, id);

CREATE INDEX actions_id         ON actions (id);
CREATE INDEX appointments_id    ON appointments (id);
CREATE INDEX callbacks_id       ON callbacks (id);
CREATE INDEX customer_notes_id  ON customer_notes (id);
CREATE INDEX customers_id       ON customers (id);
CREATE INDEX locations_id       ON locations (id);
CREATE INDEX messages_id        ON messages (id);
CREATE INDEX payment_intents_id ON payment_intents (id);
CREATE INDEX payments_id        ON payments (id);
CREATE INDEX points_ledger_id   ON points_ledger (id);
CREATE INDEX practitioners_id   ON practitioners (id);
CREATE INDEX services_id        ON services (id);
CREATE INDEX slots_id           ON slots (id);

ALTER TABLE calendar_connections DROP CONSTRAINT calendar_connections_id_key;
CREATE INDEX calendar_connections_id ON calendar_connections (id);

ALTER TABLE practitioner_locations DROP CONSTRAINT practitioner_locations_pkey,
    ADD CONSTRAINT practitioner_locations_pkey PRIMARY KEY (tenant_id, practitioner_id, location_id);
ALTER TABLE practitioner_services DROP CONSTRAINT practitioner_services_pkey,
    ADD CONSTRAINT practitioner_services_pkey PRIMARY KEY (tenant_id, practitioner_id, service_id);

DROP INDEX appointments_one_per_slot;
CREATE UNIQUE INDEX appointments_one_per_slot ON appointments (tenant_id, slot_id) WHERE status = 'active';
DROP INDEX payments_one_success_per_intent;
CREATE UNIQUE INDEX payments_one_success_per_intent ON payments (tenant_id, intent_id) WHERE status = 'succeeded';

-- The steps and events of an action carry its tenant.
ALTER TABLE action_steps ADD COLUMN tenant_id uuid;
ALTER TABLE action_events ADD COLUMN tenant_id uuid;
UPDATE action_steps s SET tenant_id = a.tenant_id FROM actions a WHERE a.id = s.action_id;
UPDATE action_events e SET tenant_id = a.tenant_id FROM actions a WHERE a.id = e.action_id;
ALTER TABLE action_steps ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE action_events ALTER COLUMN tenant_id SET NOT NULL;

-- A statement that names only the action gets the action's tenant. A
-- statement that names a tenant keeps it, and the foreign key refuses one
-- that is not the action's.
CREATE FUNCTION oncecall_action_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.tenant_id IS NULL THEN
        SELECT a.tenant_id INTO NEW.tenant_id FROM actions a WHERE a.id = NEW.action_id;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER action_steps_tenant BEFORE INSERT ON action_steps
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION oncecall_action_tenant();
CREATE TRIGGER action_events_tenant BEFORE INSERT ON action_events
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION oncecall_action_tenant();

ALTER TABLE action_steps DROP CONSTRAINT action_steps_pkey,
    ADD CONSTRAINT action_steps_pkey PRIMARY KEY (tenant_id, action_id, name);
ALTER TABLE action_events DROP CONSTRAINT action_events_pkey,
    ADD CONSTRAINT action_events_pkey PRIMARY KEY (tenant_id, id);
CREATE INDEX action_steps_action ON action_steps (action_id, name);

-- The foreign keys again, each naming the tenant.
ALTER TABLE action_steps ADD CONSTRAINT action_steps_action_id_fkey
    FOREIGN KEY (tenant_id, action_id) REFERENCES actions (tenant_id, id);
ALTER TABLE action_events ADD CONSTRAINT action_events_action_id_fkey
    FOREIGN KEY (tenant_id, action_id) REFERENCES actions (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE appointments ADD CONSTRAINT appointments_customer_id_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
ALTER TABLE appointments ADD CONSTRAINT appointments_slot_id_fkey
    FOREIGN KEY (tenant_id, slot_id) REFERENCES slots (tenant_id, id);
ALTER TABLE appointments ADD CONSTRAINT appointments_service
    FOREIGN KEY (tenant_id, service_id) REFERENCES services (tenant_id, id);
ALTER TABLE calendar_appointments ADD CONSTRAINT calendar_appointments_slot_id_fkey
    FOREIGN KEY (tenant_id, slot_id) REFERENCES slots (tenant_id, id);
ALTER TABLE calendar_appointments ADD CONSTRAINT calendar_appointments_tenant_id_customer_id_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
ALTER TABLE calendar_appointments ADD CONSTRAINT calendar_appointments_tenant_id_location_id_fkey
    FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id);
ALTER TABLE calendar_appointments ADD CONSTRAINT calendar_appointments_tenant_id_practitioner_id_fkey
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id);
ALTER TABLE payment_intents ADD CONSTRAINT payment_intents_tenant_id_customer_id_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
ALTER TABLE messages ADD CONSTRAINT messages_tenant_id_customer_id_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
ALTER TABLE customer_notes ADD CONSTRAINT customer_notes_tenant_id_customer_id_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
ALTER TABLE points_ledger ADD CONSTRAINT points_ledger_tenant_id_customer_id_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
ALTER TABLE callbacks ADD CONSTRAINT callbacks_tenant_id_customer_id_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
ALTER TABLE payments ADD CONSTRAINT payments_tenant_id_intent_id_fkey
    FOREIGN KEY (tenant_id, intent_id) REFERENCES payment_intents (tenant_id, id);
ALTER TABLE slots ADD CONSTRAINT slots_location
    FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id);
ALTER TABLE slots ADD CONSTRAINT slots_practitioner
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id);
ALTER TABLE practitioner_locations ADD CONSTRAINT practitioner_locations_tenant_id_location_id_fkey
    FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id);
ALTER TABLE practitioner_locations ADD CONSTRAINT practitioner_locations_tenant_id_practitioner_id_fkey
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id);
ALTER TABLE practitioner_services ADD CONSTRAINT practitioner_services_tenant_id_practitioner_id_fkey
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id);
ALTER TABLE practitioner_services ADD CONSTRAINT practitioner_services_tenant_id_service_id_fkey
    FOREIGN KEY (tenant_id, service_id) REFERENCES services (tenant_id, id);
ALTER TABLE calendar_mappings ADD CONSTRAINT calendar_mappings_tenant_id_location_id_fkey
    FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id);
ALTER TABLE calendar_mappings ADD CONSTRAINT calendar_mappings_tenant_id_practitioner_id_fkey
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id);
