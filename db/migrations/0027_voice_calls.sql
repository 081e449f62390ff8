-- A voice call is its platform and the platform's id of it: two columns.
-- Until now one text column held both, a Dasha callId as it came and any
-- other platform's as <platform>:<id>, so a Dasha callId "vapi:X" was the
-- Vapi call X (its note amended the Vapi call's note), and a call id of
-- another platform near the 200 characters every platform may send did not
-- fit the column's limit once prefixed.
--
-- Rows written before are split the way they were written: a call id
-- "vapi:", "retell:" or "elevenlabs:" followed by an id is that platform's
-- call, any other is Dasha's. (A Dasha callId that itself began with such a
-- prefix cannot be told apart any more; it stays with that platform.)
--
-- A tool call that names no call still has its platform.
--
-- Every row that names a call is rewritten, and the new unique indexes of
-- customer_notes, callbacks and appointments are built, in the migration's
-- transaction: adding the columns locks those tables and actions against
-- reads and writes until it commits
-- (docs/migrations.md#indexes-and-the-locks-they-take).

ALTER TABLE actions
    ADD COLUMN call_platform text CHECK (call_platform IN ('dasha', 'vapi', 'retell', 'elevenlabs'));
UPDATE actions SET call_platform = split_part(call_id, ':', 1), call_id = substr(call_id, strpos(call_id, ':') + 1)
WHERE call_id ~ '^(vapi|retell|elevenlabs):.';
UPDATE actions SET call_platform = 'dasha' WHERE call_id IS NOT NULL AND call_platform IS NULL;
ALTER TABLE actions ADD CONSTRAINT actions_call CHECK (call_id IS NULL OR call_platform IS NOT NULL);

-- One note per call, customer and note_ref (migration 0013), the call now
-- being platform and id.
DROP INDEX customer_notes_per_call; -- keyed by the call id alone: X and vapi:X would be one call
ALTER TABLE customer_notes
    ADD COLUMN call_platform text CHECK (call_platform IN ('dasha', 'vapi', 'retell', 'elevenlabs'));
UPDATE customer_notes SET call_platform = split_part(call_id, ':', 1), call_id = substr(call_id, strpos(call_id, ':') + 1)
WHERE call_id ~ '^(vapi|retell|elevenlabs):.';
UPDATE customer_notes SET call_platform = 'dasha' WHERE call_id IS NOT NULL AND call_platform IS NULL;
ALTER TABLE customer_notes ADD CONSTRAINT customer_notes_call CHECK (call_id IS NULL OR call_platform IS NOT NULL);
CREATE UNIQUE INDEX customer_notes_per_call ON customer_notes (tenant_id, customer_id, call_platform, call_id, note_ref)
    WHERE call_id IS NOT NULL;

-- One callback per call, subject and callback_ref (migration 0020), likewise.
DROP INDEX callbacks_per_call; -- keyed by the call id alone: X and vapi:X would be one call
ALTER TABLE callbacks
    ADD COLUMN call_platform text CHECK (call_platform IN ('dasha', 'vapi', 'retell', 'elevenlabs'));
UPDATE callbacks SET call_platform = split_part(call_id, ':', 1), call_id = substr(call_id, strpos(call_id, ':') + 1)
WHERE call_id ~ '^(vapi|retell|elevenlabs):.';
UPDATE callbacks SET call_platform = 'dasha' WHERE call_id IS NOT NULL AND call_platform IS NULL;
ALTER TABLE callbacks ADD CONSTRAINT callbacks_call CHECK (call_id IS NULL OR call_platform IS NOT NULL);
CREATE UNIQUE INDEX callbacks_per_call ON callbacks (tenant_id, subject, call_platform, call_id, callback_ref)
    WHERE call_id IS NOT NULL;

-- One booking per customer and call. An appointment booked in a voice call
-- records the call and its booking_ref; while it is active, another
-- booking of the same customer in the same call under the same booking_ref
-- is refused (ALREADY_BOOKED_IN_CALL, with the one that stands): a caller
-- who changes their mind has the appointment moved, and a second one is
-- asked for by name, as notes are (note_ref). A cancelled one no longer
-- stands; a moved one does, at its new time. Bookings made outside a call
-- (REST) or before this migration record no call.
ALTER TABLE appointments
    ADD COLUMN call_platform text CHECK (call_platform IN ('dasha', 'vapi', 'retell', 'elevenlabs')),
    ADD COLUMN call_id text CHECK (length(call_id) BETWEEN 1 AND 200),
    ADD COLUMN booking_ref text NOT NULL DEFAULT '' CHECK (length(booking_ref) <= 100),
    ADD CONSTRAINT appointments_call CHECK (call_id IS NULL OR call_platform IS NOT NULL);
CREATE UNIQUE INDEX appointments_per_call ON appointments (tenant_id, customer_id, call_platform, call_id, booking_ref)
    WHERE call_id IS NOT NULL AND status = 'active';
