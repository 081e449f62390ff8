package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestOperatorCommandsResolveAStuckAction(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"tenant", "create", "--name", "ops", "--json"}, &out, &out); err != nil {
		t.Fatalf("tenant create: %v", err)
	}
	var created struct {
		TenantID string `json:"tenant_id"`
	}
	if err := json.Unmarshal(out.Bytes(), &created); err != nil {
		t.Fatalf("tenant create --json: %v: %s", err, out.String())
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// A booking whose provider answer was lost and that recovery gave up on.
	id := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, needs_operator)
		VALUES ($1, $2, 'k', 'appointment.book', 'f', $3, 'unknown', true)`, id, created.TenantID,
		`{"customer_id":"0197a3b0-0000-7000-8000-000000000001","slot_id":"0197a3b0-0000-7000-8000-000000000002","service":"","notify":""}`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key, external_ref, payload, state)
		VALUES ($1, 'calendar', 0, 'calendar', true, 'appointment.book', 'oc-key', $2, '{}', 'unknown')`, id, id.String()+"/calendar"); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	if err := run(ctx, []string{"actions", "list", "--needs-operator"}, &out, &out); err != nil || !strings.Contains(out.String(), id.String()) {
		t.Fatalf("actions list: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"actions", "show", id.String()}, &out, &out); err != nil || !strings.Contains(out.String(), "oc-key") {
		t.Fatalf("actions show: %v\n%s", err, out.String())
	}
	out.Reset()
	err = run(ctx, []string{"actions", "resolve", id.String(), "--outcome", "confirmed", "--note", "seen", "--by", "ana"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "provider_ref") {
		t.Fatalf("confirming without a provider reference: %v", err)
	}
	out.Reset()
	if err := run(ctx, []string{"actions", "resolve", id.String(), "--outcome", "confirmed", "--provider-ref", "bk_9",
		"--note", "booking bk_9 found in the calendar admin", "--by", "ana"}, &out, &out); err != nil {
		t.Fatalf("actions resolve: %v\n%s", err, out.String())
	}
	var state, outcome, ref string
	if err := pool.QueryRow(ctx, `SELECT a.state, a.outcome, s.provider_ref FROM actions a JOIN action_steps s ON s.action_id = a.id
		WHERE a.id = $1 AND NOT a.needs_operator`, id).Scan(&state, &outcome, &ref); err != nil || state != "completed" || outcome != "confirmed" || ref != "bk_9" {
		t.Fatalf("after resolve: %s %s %s (%v)", state, outcome, ref, err)
	}
	var by string
	if err := pool.QueryRow(ctx, `SELECT detail->>'by' FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator'`, id).Scan(&by); err != nil || by != "ana" {
		t.Fatalf("resolution event: %q %v", by, err)
	}
}
