package db_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db/dbsqlc"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// The console's search (migration 0034) reads indexes only: on 20,000
// actions of 50 tenants, each of its statements is planned as index scans
// (action_search_terms' GIN index, the customers' phone, e-mail and name
// indexes, a customer's appointments, payment intents and callbacks, a
// provider's reference), never as a sequential scan of a table that grows
// with the business, both as the store first runs it (a custom plan) and
// as PostgreSQL may cache it (a generic plan).
func TestConsoleSearchUsesIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	for _, stmt := range []string{
		`INSERT INTO tenants (id, name) SELECT md5('tenant-' || g)::uuid, 'tenant ' || g FROM generate_series(1, 50) g`,
		`INSERT INTO customers (id, tenant_id, name, phone, email)
		 SELECT md5('customer-' || g)::uuid, md5('tenant-' || (g % 50 + 1))::uuid,
		        (ARRAY['Maria', 'Ana', 'Bo', 'Dana', 'Eve'])[1 + g % 5] || ' Lopez' || g,
		        '+1555' || lpad(g::text, 7, '0'), 'c' || g || '@example.com'
		 FROM generate_series(1, 5000) g`,
		`INSERT INTO slots (id, tenant_id, starts_at, ends_at)
		 SELECT md5('slot-' || g)::uuid, md5('tenant-' || (g % 50 + 1))::uuid, now() + g * interval '1 hour', now() + g * interval '1 hour' + interval '30 minutes'
		 FROM generate_series(1, 5000) g`,
		`INSERT INTO appointments (id, tenant_id, customer_id, slot_id, status, action_id)
		 SELECT md5('appointment-' || g)::uuid, md5('tenant-' || (g % 50 + 1))::uuid, md5('customer-' || g)::uuid,
		        md5('slot-' || g)::uuid, (ARRAY['active', 'cancelled'])[1 + g % 2], md5('action-' || g)::uuid
		 FROM generate_series(1, 5000) g`,
		`INSERT INTO payment_intents (id, tenant_id, customer_id, amount, currency, payment_method, action_id)
		 SELECT md5('intent-' || g)::uuid, md5('tenant-' || (g % 50 + 1))::uuid, md5('customer-' || g)::uuid, 4500, 'EUR', 'pm_card_ok',
		        md5('action-' || (5000 + g))::uuid
		 FROM generate_series(1, 5000) g`,
		`INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, call_platform, call_id, state, outcome, resource_id)
		 SELECT md5('action-' || g)::uuid, md5('tenant-' || (g % 50 + 1))::uuid, 'key-' || g,
		        (ARRAY['appointment.book', 'payment.charge', 'message.send', 'appointment.cancel'])[1 + g % 4], 'fp',
		        CASE g % 4
		          WHEN 0 THEN jsonb_build_object('customer_id', md5('customer-' || (g % 5000 + 1))::uuid, 'slot_id', md5('slot-' || g)::uuid)
		          WHEN 1 THEN jsonb_build_object('payment_intent_id', md5('intent-' || (g % 5000 + 1))::uuid)
		          WHEN 2 THEN jsonb_build_object('to', '+1555' || lpad((g % 5000 + 1)::text, 7, '0'), 'customer_id', '')
		          ELSE jsonb_build_object('appointment_id', md5('appointment-' || (g % 5000 + 1))::uuid)
		        END,
		        'vapi', 'call-' || (g / 3), 'completed', 'confirmed', md5('resource-' || g)
		 FROM generate_series(1, 20000) g`,
		`INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key, external_ref, payload, state, provider_ref)
		 SELECT md5('action-' || g)::uuid, 'write', 1, 'calendar', true, 'write', 'pk-' || g, 'ext-' || g, '{}', 'succeeded', 'ref_' || g
		 FROM generate_series(1, 20000) g`,
		`INSERT INTO callbacks (id, tenant_id, customer_id, phone, subject, window_start, window_end, timezone, reason, action_id, callback_ref)
		 SELECT md5('callback-' || g)::uuid, md5('tenant-' || (g % 50 + 1))::uuid, CASE WHEN g % 2 = 0 THEN md5('customer-' || g)::uuid END,
		        CASE WHEN g % 2 = 1 THEN '+1555' || lpad(g::text, 7, '0') END, 'subject-' || g,
		        now(), now() + interval '1 hour', 'UTC', 'call me', md5('action-' || g)::uuid, ''
		 FROM generate_series(1, 5000) g`,
		`ANALYZE`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%v\n%s", err, stmt)
		}
	}
	tenants := make([]uuid.UUID, 0, 50)
	rows, err := pool.Query(ctx, `SELECT id FROM tenants`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		tenants = append(tenants, id)
	}
	var customer, tenant uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT id, tenant_id FROM customers WHERE phone = '+15550000042'`).Scan(&customer, &tenant); err != nil {
		t.Fatal(err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	big := []string{"actions", "customers", "appointments", "payment_intents", "callbacks", "action_steps"}
	for _, c := range []struct {
		name    string
		record  func(*dbsqlc.Queries) error
		args    []any
		indexes []string
		literal string // the EXECUTE arguments of the generic plan
	}{
		{"SearchActions", func(q *dbsqlc.Queries) error {
			_, err := q.SearchActions(ctx, dbsqlc.SearchActionsParams{})
			return err
		}, []any{tenants, 200, []string{"s:+15550000042", "c:call-7", "k:0123456789ab"}}, []string{"actions_search"},
			fmt.Sprintf(`ARRAY['%s']::uuid[], 200, ARRAY['s:+15550000042', 'c:call-7']::text[]`, tenant)},
		{"SearchCustomers", func(q *dbsqlc.Queries) error {
			_, err := q.SearchCustomers(ctx, dbsqlc.SearchCustomersParams{})
			return err
		}, []any{tenants, []uuid.UUID{customer}, "+15550000042", "c42@example.com", "mar:* & lop:*"},
			[]string{"customers_phone", "customers_email", "customers_name_words", "customers_id"},
			fmt.Sprintf(`ARRAY['%s']::uuid[], ARRAY['%s']::uuid[], '+15550000042', 'c42@example.com', 'mar:*'`, tenant, customer)},
		{"CustomerLinks", func(q *dbsqlc.Queries) error {
			_, err := q.CustomerLinks(ctx, dbsqlc.CustomerLinksParams{})
			return err
		}, []any{tenant, customer}, []string{"appointments_customer", "payment_intents_customer", "callbacks_customer"},
			fmt.Sprintf(`'%s', '%s'`, tenant, customer)},
		{"CallbacksToPhone", func(q *dbsqlc.Queries) error {
			_, err := q.CallbacksToPhone(ctx, dbsqlc.CallbacksToPhoneParams{})
			return err
		}, []any{tenants, "+15550000043"}, []string{"callbacks_phone"}, fmt.Sprintf(`ARRAY['%s']::uuid[], '+15550000043'`, tenant)},
		{"ActionsOfProviderRef", func(q *dbsqlc.Queries) error {
			_, err := q.ActionsOfProviderRef(ctx, dbsqlc.ActionsOfProviderRefParams{})
			return err
		}, []any{"ref_42", tenants}, []string{"action_steps_provider_ref"}, fmt.Sprintf(`'ref_42', ARRAY['%s']::uuid[]`, tenant)},
	} {
		rec := &recorder{}
		if err := c.record(dbsqlc.New(rec)); !errors.Is(err, errRecorded) || rec.sql == "" {
			t.Fatalf("recording %s: %v", c.name, err)
		}
		check := func(label, sql string, args ...any) {
			t.Helper()
			plan, out := explain(t, conn, label, sql, args...)
			used := map[string]bool{}
			plan.walk(func(n planNode) {
				if n.NodeType == "Seq Scan" && strings.Contains(strings.Join(big, " "), n.RelationName) {
					t.Errorf("%s scans %s sequentially:\n%s", label, n.RelationName, out)
				}
				if n.IndexName != "" {
					used[n.IndexName] = true
				}
			})
			for _, ix := range c.indexes {
				if !used[ix] {
					t.Errorf("%s does not use the index %s:\n%s", label, ix, out)
				}
			}
		}
		check(c.name+"'s custom plan", "EXPLAIN (FORMAT JSON) "+rec.sql, c.args...)
		name := strings.ToLower(c.name)
		reset := planGeneric(t, conn, name, rec.sql)
		check(c.name+"'s generic plan", "EXPLAIN (FORMAT JSON) EXECUTE "+name+"("+c.literal+")")
		reset()
		if _, err := conn.Exec(ctx, "DEALLOCATE "+name); err != nil {
			t.Fatal(err)
		}
	}

	// What the index holds is what the console looks for: the charge of a
	// customer's payment intent is found by the intent, her message by
	// her phone, a call by its id, a key by its hash.
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM actions
		WHERE action_search_terms(request, call_id, idempotency_key, resource_id) && ARRAY['s:' || md5('intent-42')::uuid::text]`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("actions naming intent 42: %d %v", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM actions
		WHERE action_search_terms(request, call_id, idempotency_key, resource_id) && ARRAY['k:' || left(encode(sha256('key-7'::bytea), 'hex'), 12)]`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("actions of key-7 by its hash: %d %v", n, err)
	}
}
