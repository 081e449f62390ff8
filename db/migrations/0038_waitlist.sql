-- The waitlist: a caller asks to be offered an earlier time with a
-- practitioner, for a service, or both, optionally before a local date of
-- the business's clock.
--
-- One entry per call and customer. An entry made during a voice call
-- records the call; a later request of the same call and customer amends
-- that entry (service, practitioner, date, note) instead of adding a second
-- one, as callbacks do (migration 0020). Entries made outside a call (REST,
-- call_id NULL) are each their own.
CREATE TABLE waitlist_entries (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    customer_id     uuid NOT NULL,
    service_id      uuid,
    practitioner_id uuid,
    -- The caller wants a time before this local date; NULL: any earlier time.
    before_date     date,
    note            text NOT NULL DEFAULT '',
    -- The action that made the entry, or last amended it.
    action_id       uuid NOT NULL,
    call_platform   text CHECK (call_platform IN ('dasha', 'vapi', 'retell', 'elevenlabs')),
    call_id         text,
    status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'cancelled')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    amended_at      timestamptz,
    cancelled_at    timestamptz,
    PRIMARY KEY (tenant_id, id),
    CHECK (service_id IS NOT NULL OR practitioner_id IS NOT NULL),
    CHECK (call_id IS NULL OR call_platform IS NOT NULL),
    CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL)),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id),
    FOREIGN KEY (tenant_id, service_id) REFERENCES services (tenant_id, id),
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id)
);
CREATE UNIQUE INDEX waitlist_entries_per_call ON waitlist_entries (tenant_id, customer_id, call_platform, call_id)
    WHERE call_id IS NOT NULL;
CREATE INDEX waitlist_entries_id ON waitlist_entries (id);
-- The staff's listing: newest first, all or by status.
CREATE INDEX waitlist_entries_status ON waitlist_entries (tenant_id, status, id);
