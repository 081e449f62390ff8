package db_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Migration 0027 splits the calls written before it the way they were
// written: "<platform>:<id>" for Vapi, Retell and ElevenLabs, the id alone
// for Dasha. Afterwards a Dasha call and a Vapi call of equal ids hold a
// note each, and the Dasha callId "vapi:X" is no longer the Vapi call X.
func TestVoiceCallsMigrationSplitsThePlatformFromTheCallID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var before []string
	for _, f := range files {
		v := strings.TrimSuffix(filepath.Base(f), ".sql")
		if v < "0027" {
			before = append(before, v)
		}
	}
	url := pgtest.NewEmptyDB(t)
	oldMigrate(t, url, shippedMigrations(t, before...))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const tenant, customer = "01936a6e-0000-7000-8000-000000000001", "01936a6e-0000-7000-8000-000000000002"
	exec("INSERT INTO tenants (id, name) VALUES ($1, 'acme')", tenant)
	exec("INSERT INTO customers (id, tenant_id, name) VALUES ($1, $2, 'Ana')", customer, tenant)
	// The call ids as they were stored before.
	for _, stored := range []string{"vapi:X", "retell:call_r", "elevenlabs:conv_e", "X", "call_dasha", "vapi:"} {
		exec(`INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, outcome, call_id)
			VALUES (gen_random_uuid(), $1, $2, 'customer.note.append', 'f', '{}', 'completed', 'confirmed', $3)`,
			tenant, "k"+stored, stored)
		exec(`INSERT INTO customer_notes (id, tenant_id, customer_id, text, action_id, call_id, note_ref)
			VALUES (gen_random_uuid(), $1, $2, $3, gen_random_uuid(), $3, '')`, tenant, customer, stored)
		exec(`INSERT INTO callbacks (id, tenant_id, customer_id, subject, window_start, window_end, timezone, reason, action_id, call_id)
			VALUES (gen_random_uuid(), $1, $2::uuid, $2::text, now(), now() + interval '1 hour', 'UTC', $3, gen_random_uuid(), $3)`,
			tenant, customer, stored)
	}
	exec(`INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, outcome)
		VALUES (gen_random_uuid(), $1, 'rest', 'customer.note.append', 'f', '{}', 'completed', 'confirmed')`, tenant)

	if err := app.Migrate(ctx, url); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	for stored, want := range map[string][2]string{
		"vapi:X": {"vapi", "X"}, "retell:call_r": {"retell", "call_r"}, "elevenlabs:conv_e": {"elevenlabs", "conv_e"},
		"X": {"dasha", "X"}, "call_dasha": {"dasha", "call_dasha"}, "vapi:": {"dasha", "vapi:"},
	} {
		if n := count("SELECT count(*) FROM actions WHERE idempotency_key = $1 AND call_platform = $2 AND call_id = $3",
			"k"+stored, want[0], want[1]); n != 1 {
			t.Errorf("the action of call %q is not platform %s, call %s", stored, want[0], want[1])
		}
		if n := count("SELECT count(*) FROM customer_notes WHERE text = $1 AND call_platform = $2 AND call_id = $3",
			stored, want[0], want[1]); n != 1 {
			t.Errorf("the note of call %q is not platform %s, call %s", stored, want[0], want[1])
		}
		if n := count("SELECT count(*) FROM callbacks WHERE reason = $1 AND call_platform = $2 AND call_id = $3",
			stored, want[0], want[1]); n != 1 {
			t.Errorf("the callback of call %q is not platform %s, call %s", stored, want[0], want[1])
		}
	}
	if n := count("SELECT count(*) FROM actions WHERE idempotency_key = 'rest' AND call_platform IS NULL AND call_id IS NULL"); n != 1 {
		t.Error("a REST action got a call")
	}
	// The Vapi call X and the Dasha call X each keep their note; the Dasha
	// callId "vapi:X" is a call of its own.
	exec(`INSERT INTO customer_notes (id, tenant_id, customer_id, text, action_id, call_id, call_platform, note_ref)
		VALUES (gen_random_uuid(), $1, $2, 'dasha vapi:X', gen_random_uuid(), 'vapi:X', 'dasha', '')`, tenant, customer)
	if _, err := conn.Exec(ctx, `INSERT INTO customer_notes (id, tenant_id, customer_id, text, action_id, call_id, call_platform, note_ref)
		VALUES (gen_random_uuid(), $1, $2, 'again', gen_random_uuid(), 'X', 'vapi', '')`, tenant, customer); err == nil {
		t.Error("a second note of the Vapi call X under one note_ref was accepted")
	}
	if _, err := conn.Exec(ctx, `UPDATE actions SET call_platform = NULL WHERE idempotency_key = 'kX'`); err == nil {
		t.Error("an action with a call and no platform was accepted")
	}
	if _, err := conn.Exec(ctx, `UPDATE actions SET call_id = $1 WHERE idempotency_key = 'kX'`, strings.Repeat("c", 200)); err != nil {
		t.Errorf("a call id of 200 characters: %v", err)
	}
}
