-- Scheduling a business can use: the tenant's timezone, in which weekly
-- opening hours are read and times are spoken to callers, and an index for
-- a customer's upcoming appointments (a returning caller's first question).

-- An IANA zone name such as Europe/London. PostgreSQL cannot check it
-- against the zone database oncecall uses (Go's), so the program validates
-- it (oncecall tenant create --timezone); the column only bounds it.
ALTER TABLE tenants ADD COLUMN timezone text NOT NULL DEFAULT 'UTC'
    CHECK (timezone <> '' AND length(timezone) <= 64);

CREATE INDEX appointments_customer_active ON appointments (tenant_id, customer_id) WHERE status = 'active';
