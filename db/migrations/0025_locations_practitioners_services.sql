-- A business with more than one calendar: the places it works at
-- (locations, each with its own timezone, since a chain may span zones),
-- the people who see its customers (practitioners, each working at some
-- locations and performing some services) and what customers book
-- (services, each with a duration, an optional buffer after it and an
-- optional price). Every table is per tenant; the composite foreign keys
-- keep a practitioner, a location and a service of one tenant together.
--
-- A slot may belong to a practitioner at a location. A tenant that never
-- creates any keeps its single calendar: slots without a practitioner, as
-- before. Slots of one practitioner never overlap (the program checks it
-- under a per-practitioner lock when it creates them), so the partial
-- unique index of appointments on slot_id (migration 0002), which lets a
-- slot hold one active booking, also lets a practitioner hold one booking
-- at a time, wherever they work.

CREATE TABLE locations (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    name       text NOT NULL CHECK (name <> '' AND length(name) <= 200),
    -- An IANA zone name, validated by the program (as tenants.timezone).
    timezone   text NOT NULL CHECK (timezone <> '' AND length(timezone) <= 64),
    -- How the place is spoken of to a caller: "12 High Street, Leeds".
    address    text NOT NULL DEFAULT '' CHECK (length(address) <= 500),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id)
);
CREATE UNIQUE INDEX locations_name ON locations (tenant_id, lower(name));

CREATE TABLE practitioners (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    name       text NOT NULL CHECK (name <> '' AND length(name) <= 200),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id)
);
CREATE UNIQUE INDEX practitioners_name ON practitioners (tenant_id, lower(name));

CREATE TABLE services (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    name             text NOT NULL CHECK (name <> '' AND length(name) <= 200),
    duration_minutes integer NOT NULL CHECK (duration_minutes BETWEEN 5 AND 1440),
    -- Time kept free after the service (cleaning a room): a booking of the
    -- service needs a slot at least duration + buffer long.
    buffer_minutes   integer NOT NULL DEFAULT 0 CHECK (buffer_minutes BETWEEN 0 AND 240),
    -- The price in the currency's minor units, for payment intents; NULL
    -- when the service has no set price.
    price_amount     bigint CHECK (price_amount >= 0),
    currency         text CHECK (currency ~ '^[a-z]{3}$'),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((price_amount IS NULL) = (currency IS NULL)),
    UNIQUE (tenant_id, id)
);
CREATE UNIQUE INDEX services_name ON services (tenant_id, lower(name));

CREATE TABLE practitioner_locations (
    tenant_id       uuid NOT NULL,
    practitioner_id uuid NOT NULL,
    location_id     uuid NOT NULL,
    PRIMARY KEY (practitioner_id, location_id),
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id),
    FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id)
);
CREATE INDEX practitioner_locations_location ON practitioner_locations (location_id);

CREATE TABLE practitioner_services (
    tenant_id       uuid NOT NULL,
    practitioner_id uuid NOT NULL,
    service_id      uuid NOT NULL,
    PRIMARY KEY (practitioner_id, service_id),
    FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id),
    FOREIGN KEY (tenant_id, service_id) REFERENCES services (tenant_id, id)
);
CREATE INDEX practitioner_services_service ON practitioner_services (service_id);

-- Whose slot it is and where: both or neither.
ALTER TABLE slots
    ADD COLUMN practitioner_id uuid,
    ADD COLUMN location_id uuid,
    ADD CONSTRAINT slots_practitioner_location CHECK ((practitioner_id IS NULL) = (location_id IS NULL)),
    ADD CONSTRAINT slots_practitioner FOREIGN KEY (tenant_id, practitioner_id) REFERENCES practitioners (tenant_id, id),
    ADD CONSTRAINT slots_location FOREIGN KEY (tenant_id, location_id) REFERENCES locations (tenant_id, id);
CREATE INDEX slots_practitioner_starts ON slots (practitioner_id, starts_at) WHERE practitioner_id IS NOT NULL;
CREATE INDEX slots_location_starts ON slots (location_id, starts_at) WHERE location_id IS NOT NULL;

-- The service an appointment was booked for, when it was booked by one;
-- appointments.service keeps its name as the caller heard it.
ALTER TABLE appointments
    ADD COLUMN service_id uuid,
    ADD CONSTRAINT appointments_service FOREIGN KEY (tenant_id, service_id) REFERENCES services (tenant_id, id);
