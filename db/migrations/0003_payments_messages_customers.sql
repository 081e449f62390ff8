-- Payment intents and payments, the message outbox, customer notes and the
-- loyalty points ledger: the local provider's tables for the payment,
-- message and customer operations.

-- Rows that point at a customer name the tenant too, and the foreign key
-- covers both, so a row can never join one tenant's data to another's
-- customer, whatever the code above does.
ALTER TABLE customers ADD CONSTRAINT customers_tenant_id_id UNIQUE (tenant_id, id);

-- An amount approved for a customer, charged at most once.
CREATE TABLE payment_intents (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    customer_id     uuid NOT NULL,
    -- Minor units; at most 2^53-1 so every JSON client reads it exactly.
    amount          bigint NOT NULL CHECK (amount BETWEEN 1 AND 9007199254740991),
    currency        char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    description     text NOT NULL DEFAULT '',
    -- What the local payment provider charges: pm_card_ok or pm_card_declined.
    payment_method  text NOT NULL,
    status          text NOT NULL DEFAULT 'requires_capture'
                    CHECK (status IN ('requires_capture', 'captured')),
    captured_amount bigint,
    action_id       uuid NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id),
    CHECK ((status = 'captured') = (captured_amount IS NOT NULL)),
    CHECK (captured_amount BETWEEN 1 AND amount)
);
CREATE INDEX payment_intents_customer ON payment_intents (customer_id);

-- Every charge attempt the provider answered: succeeded or declined.
CREATE TABLE payments (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    intent_id    uuid NOT NULL,
    amount       bigint NOT NULL CHECK (amount > 0),
    currency     char(3) NOT NULL,
    status       text NOT NULL CHECK (status IN ('succeeded', 'declined')),
    decline_code text,
    action_id    uuid NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, intent_id) REFERENCES payment_intents (tenant_id, id),
    CHECK ((status = 'declined') = (decline_code IS NOT NULL))
);
-- An intent is charged at most once, whatever keys the charges used.
CREATE UNIQUE INDEX payments_one_success_per_intent ON payments (intent_id) WHERE status = 'succeeded';
CREATE INDEX payments_intent ON payments (intent_id, created_at);

-- The outbox: one row per intended send, with the text as rendered. A
-- sender (not part of the local provider) delivers queued rows.
CREATE TABLE messages (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    customer_id  uuid,
    recipient    text NOT NULL,
    channel      text NOT NULL CHECK (channel IN ('sms', 'email')),
    template     text NOT NULL,
    subject_line text,
    body         text NOT NULL,
    subject_id   text,
    send_ref     text,
    status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued')),
    action_id    uuid NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id),
    CHECK ((channel = 'email') = (subject_line IS NOT NULL))
);
CREATE INDEX messages_queued ON messages (created_at) WHERE status = 'queued';
CREATE INDEX messages_customer ON messages (customer_id) WHERE customer_id IS NOT NULL;

CREATE TABLE customer_notes (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    customer_id uuid NOT NULL,
    text        text NOT NULL CHECK (text <> ''),
    action_id   uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
CREATE INDEX customer_notes_customer ON customer_notes (customer_id, created_at);

-- Every change of customers.points, with the balance it produced. The
-- balance itself lives on customers (CHECK points >= 0).
CREATE TABLE points_ledger (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    customer_id   uuid NOT NULL,
    delta         bigint NOT NULL CHECK (delta <> 0),
    reason        text NOT NULL CHECK (reason <> ''),
    balance_after bigint NOT NULL CHECK (balance_after >= 0),
    action_id     uuid NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
CREATE INDEX points_ledger_customer ON points_ledger (customer_id, created_at);
