-- Which provider each step is planned for: its kind (http, stripe, twilio,
-- local, ...) and account (the http provider's base URL, the Stripe account
-- or the key's mode, the Twilio account SID; never a secret), named by the
-- process that claims the action, from its configuration. Only a server
-- configured for that provider drives the step (LeaseDue, LeaseAbandoned
-- and the driver), so a server without it never takes the action's lease,
-- records no check on it and never sends it to its own provider.
--
-- Steps claimed before this migration have neither (NULL): a server that
-- serves their capability drives them, as before (a write before the
-- required one also by the local provider), and the first send names its
-- provider (BeginSend).
--
-- Adding nullable columns without a default rewrites nothing; the check is
-- NOT VALID, so it holds for every row written from now on without reading
-- the existing ones under the table's lock.
ALTER TABLE action_steps
    ADD COLUMN provider_kind    text,
    ADD COLUMN provider_account text,
    ADD CONSTRAINT action_steps_provider_named CHECK ((provider_kind IS NULL) = (provider_account IS NULL)) NOT VALID;
