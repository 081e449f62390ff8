-- Leases have owners. Whoever holds an action's lease (the request that
-- claimed it, a reconciler pass, an operator) holds it under a token of its
-- own, and every change it makes to the action or its steps names that
-- token: a holder whose lease was taken over changes nothing.
ALTER TABLE actions ADD COLUMN lease_owner uuid;

-- A step's version counts its changes; a driver sends a step only if it is
-- still at the version the driver read.
ALTER TABLE action_steps ADD COLUMN version integer NOT NULL DEFAULT 0;

-- A step is never removed together with its action: the pruner deletes the
-- steps of finished actions itself, and an unresolved step blocks the delete.
ALTER TABLE action_steps DROP CONSTRAINT action_steps_action_id_fkey;
ALTER TABLE action_steps ADD CONSTRAINT action_steps_action_id_fkey
    FOREIGN KEY (action_id) REFERENCES actions (id);

-- A charge performed by a remote payments provider: while it is in flight
-- the intent is held for that action, so no second charge can start.
ALTER TABLE payment_intents ADD COLUMN charging_action_id uuid;
ALTER TABLE payment_intents ADD CONSTRAINT payment_intents_charging_not_captured
    CHECK (charging_action_id IS NULL OR status = 'requires_capture');
-- The provider's reference of a charge it performed.
ALTER TABLE payments ADD COLUMN provider_ref text;
