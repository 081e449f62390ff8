-- Payment links by SMS, withdrawn approvals, and a Twilio sender per tenant.

-- What a succeeded step's write gave back that a later step of the same
-- action uses (a Checkout Session's id and URL, which the SMS after it
-- carries); NULL for writes that give nothing back.
ALTER TABLE action_steps ADD COLUMN result jsonb;

-- The outbox row a step of an action wrote (a payment link's SMS sent by
-- the local provider) is found by its action.
CREATE INDEX messages_action ON messages (action_id);

-- An approved intent that is withdrawn (its hold cancelled) or whose hold
-- expired uncaptured can no longer be charged.
ALTER TABLE payment_intents DROP CONSTRAINT payment_intents_status_check;
ALTER TABLE payment_intents ADD CONSTRAINT payment_intents_status_check
    CHECK (status IN ('requires_capture', 'captured', 'withdrawn', 'expired'));
-- The reconciler's pass finds the holds past their deadline (flagged or not).
CREATE INDEX payment_intents_lapsing_holds ON payment_intents (capture_before)
    WHERE hold_ref IS NOT NULL AND status = 'requires_capture';

-- A tenant's own Twilio sender: a number (E.164) or a Messaging Service
-- (MG...); NULL: the process default (TWILIO_FROM,
-- TWILIO_MESSAGING_SERVICE_SID).
ALTER TABLE tenants ADD COLUMN twilio_from text
    CHECK (twilio_from ~ '^\+[1-9][0-9]{6,14}$');
ALTER TABLE tenants ADD COLUMN twilio_messaging_service text
    CHECK (twilio_messaging_service ~ '^MG[0-9a-fA-F]{32}$');
ALTER TABLE tenants ADD CONSTRAINT tenants_one_twilio_sender
    CHECK (twilio_from IS NULL OR twilio_messaging_service IS NULL);
