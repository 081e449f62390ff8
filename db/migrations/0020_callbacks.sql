-- Callbacks: a caller asks to be called back, within a window of the
-- business's wall clock, for a reason. Who is called back is a customer, a
-- phone number, or both; subject is the one that identifies the callback
-- (the customer's id, else the phone number).
--
-- One callback per call. A callback requested during a voice call records
-- the call and its callback_ref; a later request of the same call, subject
-- and callback_ref amends that callback (reason, window) instead of adding
-- a second one, as customer_notes does for notes (migration 0013).
-- Callbacks requested outside a call (REST, call_id NULL) are each their
-- own. The window is kept as instants, with the timezone it was read in.
CREATE TABLE callbacks (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    customer_id  uuid,
    phone        text,
    subject      text NOT NULL CHECK (subject <> ''),
    window_start timestamptz NOT NULL,
    window_end   timestamptz NOT NULL,
    timezone     text NOT NULL,
    reason       text NOT NULL CHECK (reason <> ''),
    -- The action that requested the callback, or last amended it.
    action_id    uuid NOT NULL,
    call_id      text,
    callback_ref text NOT NULL DEFAULT '',
    status       text NOT NULL DEFAULT 'requested' CHECK (status IN ('requested', 'cancelled')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    amended_at   timestamptz,
    cancelled_at timestamptz,
    CHECK (customer_id IS NOT NULL OR phone IS NOT NULL),
    CHECK (window_end > window_start),
    CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL)),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
CREATE UNIQUE INDEX callbacks_per_call ON callbacks (tenant_id, subject, call_id, callback_ref)
    WHERE call_id IS NOT NULL;
CREATE INDEX callbacks_customer ON callbacks (tenant_id, customer_id, window_start) WHERE customer_id IS NOT NULL;
CREATE INDEX callbacks_phone ON callbacks (tenant_id, phone, window_start) WHERE phone IS NOT NULL;
