-- The calendar a business already uses (Google Calendar, Microsoft 365,
-- Cal.com) as the home of its appointments: one connection per tenant, the
-- map of its practitioners (and locations) to the provider's calendars, and
-- oncecall's record of every appointment it booked there. A tenant without
-- a connection books in oncecall's own tables (or through the http
-- calendar provider) as before; nothing here changes them.

-- One connection per tenant. Secrets are never stored: credentials names
-- where this server reads them (a file, or an environment variable), and a
-- server that cannot read them does not drive the tenant's calendar steps.
CREATE TABLE calendar_connections (
    tenant_id   uuid PRIMARY KEY REFERENCES tenants (id),
    -- Names the connection in the steps planned for it
    -- (action_steps.provider_account): kept when the connection is updated
    -- with the same provider, new when the provider changes.
    id          uuid NOT NULL UNIQUE,
    provider    text NOT NULL CHECK (provider IN ('google', 'microsoft', 'calcom')),
    -- 'file:<path>' or 'env:<NAME>': the Google service account's key (JSON),
    -- the Microsoft app's client secret, the Cal.com API key.
    credentials text NOT NULL CHECK (credentials ~ '^(file:.+|env:[A-Za-z_][A-Za-z0-9_]*)$' AND length(credentials) <= 1024),
    -- The provider's API base when it is not the provider's own (a
    -- self-hosted Cal.com, a simulator); '' for the provider's.
    base_url    text NOT NULL DEFAULT '' CHECK (length(base_url) <= 1024),
    -- What the provider needs besides the secret, none of it secret:
    -- Google's subject (domain-wide delegation), Microsoft's directory and
    -- client ids and token issuer.
    settings    jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Which calendar holds a practitioner's appointments: the provider's
-- calendar id (a Google calendar id, a Microsoft 365 mailbox, a Cal.com
-- event type id). A row without a location holds for every location of
-- the practitioner; one with a location, there only. A row without a
-- practitioner is the tenant's single calendar (slots of no practitioner).
CREATE TABLE calendar_mappings (
    tenant_id       uuid NOT NULL REFERENCES calendar_connections (tenant_id) ON DELETE CASCADE,
    practitioner_id uuid,
    location_id     uuid,
    calendar_id     text NOT NULL CHECK (calendar_id <> '' AND length(calendar_id) <= 1024),
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id),
    FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id),
    CHECK (practitioner_id IS NOT NULL OR location_id IS NULL)
);
CREATE UNIQUE INDEX calendar_mappings_one ON calendar_mappings (
    tenant_id, coalesce(practitioner_id, '00000000-0000-0000-0000-000000000000'),
    coalesce(location_id, '00000000-0000-0000-0000-000000000000'));

-- An appointment oncecall booked in a remote calendar (a connected one, or
-- the http calendar provider): its id is the booking action's, and it
-- links that id, which callers move and cancel by, to the provider's event.
-- The calendar stays the truth: reads replace starts_at, ends_at and
-- status with what it shows (read_at), and a time is free or taken by the
-- calendar's latest read, not by these rows; only a booking still in
-- flight (status 'booking') holds its time here, so that two bookings of
-- it are never both sent.
CREATE TABLE calendar_appointments (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    customer_id     uuid NOT NULL,
    slot_id         uuid REFERENCES slots (id),
    practitioner_id uuid,
    location_id     uuid,
    service_id      uuid,
    service         text NOT NULL DEFAULT '',
    -- google, microsoft, calcom, or http (the provider protocol).
    provider        text NOT NULL CHECK (provider IN ('google', 'microsoft', 'calcom', 'http')),
    calendar_id     text NOT NULL,
    -- The provider's id of the event (Cal.com: the latest booking uid after
    -- reschedules); NULL until the calendar's answer.
    event_id        text,
    etag            text,
    starts_at       timestamptz NOT NULL,
    ends_at         timestamptz NOT NULL CHECK (ends_at > starts_at),
    -- booking: sent or about to be, outcome unknown; active: in the
    -- calendar; cancelled: cancelled through oncecall, or gone from the
    -- calendar when it was read.
    status          text NOT NULL CHECK (status IN ('booking', 'active', 'cancelled')),
    -- The action moving or cancelling the appointment while its outcome is
    -- not known: a second move or cancel meanwhile is refused, never sent.
    held_by         uuid,
    -- When the calendar last showed the event; NULL: not read since oncecall wrote it.
    read_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id),
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id),
    FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id)
);
CREATE INDEX calendar_appointments_customer ON calendar_appointments (tenant_id, customer_id, starts_at);
CREATE INDEX calendar_appointments_calendar ON calendar_appointments (tenant_id, calendar_id, starts_at);
CREATE UNIQUE INDEX calendar_appointments_event ON calendar_appointments (tenant_id, provider, calendar_id, event_id)
    WHERE event_id IS NOT NULL;
