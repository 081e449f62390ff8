package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// customersPerTenant: bookings spread over this many customers of a tenant,
// as a real tenant's traffic would.
const customersPerTenant = 100

// fixture is one tenant with customers and a supply of free future slots,
// one slot per booking request.
type fixture struct {
	tenant    uuid.UUID
	apiKey    string
	customers []uuid.UUID
	slots     []uuid.UUID
	next      atomic.Int64
}

// take returns the next free slot and a customer; ok is false when the
// prepared slots are used up.
func (f *fixture) take() (slot, customer uuid.UUID, ok bool) {
	i := f.next.Add(1) - 1
	if i >= int64(len(f.slots)) {
		return uuid.UUID{}, uuid.UUID{}, false
	}
	return f.slots[i], f.customers[int(i)%len(f.customers)], true
}

// newTenant creates a tenant with its customers (in SQL, not through the
// API) and returns its fixture without slots.
func (b *bench) newTenant(ctx context.Context, name string) (*fixture, error) {
	t, key, err := b.store.CreateTenant(ctx, name, "")
	if err != nil {
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	f := &fixture{tenant: t.ID, apiKey: key}
	rows, err := b.pool.Query(ctx, insertCustomers, t.ID, customersPerTenant)
	if err != nil {
		return nil, fmt.Errorf("create customers: %w", err)
	}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		f.customers = append(f.customers, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("create customers: %w", err)
	}
	if err := b.addBareKey(ctx, key, t.ID); err != nil {
		return nil, err
	}
	return f, nil
}

// addSlots gives f n more free future slots.
func (b *bench) addSlots(ctx context.Context, f *fixture, n int) error {
	rows, err := b.pool.Query(ctx, insertSlots, f.tenant, n)
	if err != nil {
		return fmt.Errorf("create slots: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return err
		}
		f.slots = append(f.slots, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("create slots: %w", err)
	}
	return nil
}

// bookingFixture is a new tenant with enough slots for one booking run.
func (b *bench) bookingFixture(ctx context.Context, name string) (*fixture, error) {
	f, err := b.newTenant(ctx, name)
	if err != nil {
		return nil, err
	}
	return f, b.addSlots(ctx, f, b.slotsPerRun())
}

// slotsPerRun is how many slots a booking run may use: the fastest rate seen
// so far (or a generous guess before any run) over the whole run, with
// headroom. A run that still runs out stops early and says so.
func (b *bench) slotsPerRun() int {
	rate := max(b.maxRPS, 8000)
	secs := (b.warmup + b.cfg.duration).Seconds()
	return int(rate*secs*1.5) + 1000
}

// preload inserts n completed booking actions for tenant with fast SQL, in
// chunks, shaped like the ones the API stores: UUIDv7-like ids in time
// order, random keys, a fingerprint, the normalised request and a replayable
// body of the usual size. The newest completed now, the others a second
// apart, or closer when n a second apart would reach back further than
// preloadSpan: every one stays younger than the response retention, so that
// the prune scenario's prune takes none of them.
func (b *bench) preload(ctx context.Context, tenant uuid.UUID, tag string, n int) error {
	step := time.Second
	if n > 0 {
		step = min(step, preloadSpan/time.Duration(n))
	}
	return b.preloadAged(ctx, tenant, tag, n, aged{step: step, bodies: true})
}

// preloadSpan is how far back preload's actions reach at most.
const preloadSpan = 12 * time.Hour

// aged places preloaded actions in time: the newest completed newest ago,
// each of the others step before the next; bodies says whether they keep
// their normalised request and replayable body, which a prune clears a
// response retention after completion.
type aged struct {
	newest, step time.Duration
	bodies       bool
}

// preloadAged inserts n completed booking actions for tenant as preload
// does, placed in time by a.
func (b *bench) preloadAged(ctx context.Context, tenant uuid.UUID, tag string, n int, a aged) error {
	const chunk = 100_000
	for lo := 1; lo <= n; lo += chunk {
		hi := min(lo+chunk-1, n)
		if _, err := b.pool.Exec(ctx, preloadActions, tenant, tag, n, lo, hi,
			a.newest.Microseconds(), a.step.Microseconds(), a.bodies); err != nil {
			return fmt.Errorf("preload actions %d-%d: %w", lo, hi, err)
		}
		if n > chunk {
			b.logf("preload: %d/%d actions", hi, n)
		}
	}
	return nil
}

// keysOf returns a tenant's idempotency keys.
func (b *bench) keysOf(ctx context.Context, tenant uuid.UUID) ([]string, error) {
	rows, err := b.pool.Query(ctx, "SELECT idempotency_key FROM actions WHERE tenant_id = $1", tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// effects is what the database holds for a set of tenants; see check.
type effects struct {
	appointments int64
	// perAction: actions with more than one appointment.
	perAction int64
	// perSlot: slots with more than one active appointment.
	perSlot int64
	// perKey: idempotency keys with more than one action.
	perKey int64
	// orphans: appointments whose action does not exist.
	orphans int64
}

func (b *bench) effects(ctx context.Context, tenants []uuid.UUID) (effects, error) {
	var e effects
	err := b.pool.QueryRow(ctx, countEffects, tenants).Scan(&e.appointments, &e.perAction, &e.perSlot, &e.perKey, &e.orphans)
	if err != nil {
		return effects{}, fmt.Errorf("count effects: %w", err)
	}
	return e, nil
}

// Setup SQL. It runs outside the measured window, straight against the
// database: the benchmark measures bookings, not how fixtures are made.
// Ids are UUIDv7-shaped (48-bit millisecond time, version 7, variant 8),
// the i-th made i milliseconds after the statement's start, as the API
// makes them (uuid.NewV7): indexes of them grow at their right end, and
// the index of booked slots with them. (Random ids would scatter each run's
// bookings over every page of that index.)
const (
	insertCustomers = `
INSERT INTO customers (id, tenant_id, name)
SELECT ` + v7ID + `, $1, 'Bench Customer ' || i FROM generate_series(1, $2::int) AS i
RETURNING id`

	insertSlots = `
INSERT INTO slots (id, tenant_id, starts_at, ends_at, resource)
SELECT ` + v7ID + `, $1, t, t + interval '30 minutes', 'bench'
FROM (SELECT i, date_trunc('hour', now()) + interval '1 day' + i * interval '30 minutes' AS t
      FROM generate_series(1, $2::int) AS i) AS s
ORDER BY i
RETURNING id`

	// v7ID is the i-th UUIDv7-shaped id of a statement.
	v7ID = `(lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint + i), 12, '0') || '7' ||
        substr(md5(random()::text), 1, 3) || '8' || substr(md5(random()::text), 1, 15))::uuid`

	// $1 tenant, $2 tag (makes keys unique per preload), $3 total, $4-$5 the
	// chunk, $6 the newest's age and $7 the step between two in
	// microseconds, $8 whether they keep their request and body (a pruned
	// body leaves '{}' and NULL, as PruneResponses does). Ids are
	// UUIDv7-shaped (48-bit millisecond time, version 7, variant 8) so the
	// primary key grows the way the API's ids make it grow.
	preloadActions = `
WITH g AS (
    SELECT i, now() - ($6::bigint + ($3::int - i) * $7::bigint) * interval '1 microsecond' AS ts,
           md5($2 || ':' || i) AS h
    FROM generate_series($4::int, $5::int) AS i
)
INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, outcome,
                     http_status, resource_id, result, created_at, updated_at, completed_at)
SELECT (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
       $1, md5(h || 'k')::uuid::text, 'appointment.book', encode(sha256(convert_to(h, 'UTF8')), 'hex'),
       CASE WHEN $8::boolean THEN jsonb_build_object('customer_id', md5(h || 'c')::uuid, 'service', '', 'slot_id', md5(h || 's')::uuid)
            ELSE '{}'::jsonb END,
       'completed', 'confirmed', 201, md5(h || 'a')::uuid::text,
       CASE WHEN $8::boolean THEN convert_to(json_build_object('id', md5(h || 'a')::uuid, 'customer_id', md5(h || 'c')::uuid,
           'slot_id', md5(h || 's')::uuid, 'service', '', 'status', 'active',
           'starts_at', ts + interval '7 days', 'ends_at', ts + interval '7 days 30 minutes')::text, 'UTF8') END,
       ts, ts, ts
FROM g`

	countEffects = `
SELECT
  (SELECT count(*) FROM appointments WHERE tenant_id = ANY($1)),
  (SELECT count(*) FROM (SELECT 1 FROM appointments WHERE tenant_id = ANY($1)
                         GROUP BY action_id HAVING count(*) > 1) AS d),
  (SELECT count(*) FROM (SELECT 1 FROM appointments WHERE tenant_id = ANY($1) AND status = 'active'
                         GROUP BY slot_id HAVING count(*) > 1) AS d),
  (SELECT count(*) FROM (SELECT 1 FROM actions WHERE tenant_id = ANY($1)
                         GROUP BY tenant_id, idempotency_key HAVING count(*) > 1) AS d),
  (SELECT count(*) FROM appointments a WHERE a.tenant_id = ANY($1)
     AND NOT EXISTS (SELECT 1 FROM actions x WHERE x.id = a.action_id))`
)

// tenantName names a run's tenant so that leftovers in a shared database
// are recognisable.
func (b *bench) tenantName(scenario string, c int) string {
	return fmt.Sprintf("bench-%s-c%d-r%d", scenario, c, b.round)
}
