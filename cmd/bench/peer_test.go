package main

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// TestPeerBooksOnceAndReplays holds the peer to what its design promises:
// one appointment per key, a retry answered with the stored answer byte for
// byte, and the same key with another request refused without an effect.
func TestPeerBooksOnceAndReplays(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := startInProcess(t)
	f, err := b.newTenant(ctx, "peer")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.addSlots(ctx, f, 2); err != nil {
		t.Fatal(err)
	}
	slot, customer, _ := f.take()
	other, _, _ := f.take()
	url := b.bareURL + peerPath

	first := b.post(url, f.apiKey, "k1", bookBody(customer, slot), false)
	if first.err != nil || first.status != http.StatusCreated || first.replayed {
		t.Fatalf("first: %+v", first)
	}
	again := b.post(url, f.apiKey, "k1", bookBody(customer, slot), false)
	if again.status != http.StatusCreated || !again.replayed || again.hash != first.hash {
		t.Fatalf("replay: %+v, first %+v", again, first)
	}
	reused := b.post(url, f.apiKey, "k1", bookBody(customer, other), false)
	if reused.status != http.StatusUnprocessableEntity {
		t.Fatalf("the key with another request: %+v", reused)
	}
	if none := b.post(url, f.apiKey, "", bookBody(customer, other), false); none.status != http.StatusBadRequest {
		t.Fatalf("no key: %+v", none)
	}

	// One key row holding the answer, one appointment, whose action is the key row.
	var keys, appts, linked int
	err = b.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM peer_idempotency_keys WHERE tenant_id = $1 AND response_code = 201),
		(SELECT count(*) FROM appointments WHERE tenant_id = $1),
		(SELECT count(*) FROM appointments a JOIN peer_idempotency_keys k ON k.id = a.action_id
		  WHERE a.tenant_id = $1 AND a.slot_id = $2)`, f.tenant, slot).Scan(&keys, &appts, &linked)
	if err != nil {
		t.Fatal(err)
	}
	if keys != 1 || appts != 1 || linked != 1 {
		t.Fatalf("key rows %d, appointments %d, linked %d: want 1 each", keys, appts, linked)
	}
}

// startInProcess starts a bench with oncecall in this process on a fresh
// database.
func startInProcess(t *testing.T) *bench {
	t.Helper()
	cfg, err := parseFlags([]string{"--duration", "1s", "--server", "inprocess", "--database-url", pgtest.NewDB(t)}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := start(t.Context(), cfg, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	return b
}
