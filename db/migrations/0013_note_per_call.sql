-- One note per call. A note appended during a voice call records the call
-- and its note_ref; a later note of the same call, customer and note_ref
-- amends that note's text instead of adding a second one (the model
-- rewording what it records is not a second thing to record). Notes
-- appended outside a call (REST, call_id NULL) are each their own.
ALTER TABLE customer_notes
    ADD COLUMN call_id text,
    ADD COLUMN note_ref text NOT NULL DEFAULT '',
    ADD COLUMN amended_at timestamptz;
CREATE UNIQUE INDEX customer_notes_per_call ON customer_notes (tenant_id, customer_id, call_id, note_ref)
    WHERE call_id IS NOT NULL;
