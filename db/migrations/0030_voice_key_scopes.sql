-- API keys limited to one voice platform (vapi, retell, elevenlabs, and
-- dasha, which now opens only Dasha's routes) or open to all of them
-- (voice). A dasha key made before this opened every voice platform's
-- routes: it becomes a voice key, so that it opens what it opened.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scope_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scope_check
    CHECK (scope IN ('full', 'voice', 'dasha', 'vapi', 'retell', 'elevenlabs'));
UPDATE api_keys SET scope = 'voice' WHERE scope = 'dasha';
