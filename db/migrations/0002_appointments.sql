-- Customers, bookable slots and appointments: the local provider's tables.

CREATE TABLE customers (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    name         text NOT NULL DEFAULT '',
    phone        text,
    email        text,
    external_ref text,
    points       bigint NOT NULL DEFAULT 0 CHECK (points >= 0),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX customers_phone ON customers (tenant_id, phone) WHERE phone IS NOT NULL;
CREATE UNIQUE INDEX customers_external_ref ON customers (tenant_id, external_ref) WHERE external_ref IS NOT NULL;

CREATE TABLE slots (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    starts_at  timestamptz NOT NULL,
    ends_at    timestamptz NOT NULL,
    resource   text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (ends_at > starts_at)
);
CREATE INDEX slots_tenant_starts ON slots (tenant_id, starts_at);

CREATE TABLE appointments (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    customer_id uuid NOT NULL REFERENCES customers (id),
    slot_id     uuid NOT NULL REFERENCES slots (id),
    service     text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'cancelled')),
    action_id   uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- A slot holds at most one active booking.
CREATE UNIQUE INDEX appointments_one_per_slot ON appointments (slot_id) WHERE status = 'active';
CREATE INDEX appointments_tenant ON appointments (tenant_id, created_at);
