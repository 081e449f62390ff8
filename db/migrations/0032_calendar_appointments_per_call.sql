-- One booking per customer and voice call in a remote calendar too, as in
-- oncecall's own (migration 0027): an appointment booked in a call records
-- the call and the booking_ref it was booked under, and a second booking
-- of the customer in that call under the same booking_ref is refused while
-- the first stands or is still waiting for the calendar's answer. Two such
-- bookings claimed at once both find none; the second insert then fails on
-- this index, and the idempotency core claims it again with a fresh
-- snapshot, which finds the first.
ALTER TABLE calendar_appointments
    ADD COLUMN call_platform text,
    ADD COLUMN call_id text,
    ADD COLUMN booking_ref text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX calendar_appointments_per_call ON calendar_appointments (tenant_id, customer_id, call_platform, call_id, booking_ref)
    WHERE call_id IS NOT NULL AND status IN ('booking', 'active');
