-- A tenant's Retell API key (the one Retell marks for webhooks). When a
-- tenant has one, its Retell function calls must carry a valid
-- X-Retell-Signature, an HMAC-SHA256 of the body made with that key; the
-- key is stored as given, since checking an HMAC needs the key itself.
CREATE TABLE retell_keys (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    api_key text NOT NULL CHECK (length(api_key) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);
