package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/wire"
)

// The peer is idempotency as a team would write it by hand from Stripe's
// and Brandur Leach's descriptions of idempotency keys, served on bare's
// stack: one Read Committed transaction that inserts the key's row if it
// is new (INSERT … ON CONFLICT DO NOTHING), locks it (SELECT … FOR
// UPDATE), answers a key that already holds a response with that response,
// and otherwise does the booking's write (the same statement as the
// server's), stores the response in the key's row and commits. A second
// request with the key waits on the row lock, then replays. The key's row
// is also the appointment's action (appointments.action_id), so the bench's
// check of appointments per action covers the peer too.
//
// It is kept as cheap as its design allows: Read Committed rather than the
// serializable isolation of Leach's article (the row lock is what keeps
// two attempts of a key apart), the response stored as bytes rather than
// jsonb, and the request held as a SHA-256 of its normalised input rather
// than the whole input.

// peerPath is the peer's booking route on bare's server.
const peerPath = "/v1/peer/appointments"

// statementPath is the baseline's route that answers with ceiling's statement.
const statementPath = "/v1/statement"

// peerSchema is the peer's own table, made by the bench (oncecall's
// migrations know nothing of it).
const peerSchema = `
CREATE TABLE IF NOT EXISTS peer_idempotency_keys (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    idempotency_key text NOT NULL,
    request_hash    bytea NOT NULL,
    response_code   int,
    response_body   bytea,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, idempotency_key)
)`

const (
	peerInsertKey = `INSERT INTO peer_idempotency_keys (id, tenant_id, idempotency_key, request_hash)
VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, idempotency_key) DO NOTHING`
	peerLockKey = `SELECT id, request_hash, response_code, response_body FROM peer_idempotency_keys
WHERE tenant_id = $1 AND idempotency_key = $2 FOR UPDATE`
	peerStoreResponse = `UPDATE peer_idempotency_keys SET response_code = $2, response_body = $3 WHERE id = $1`
)

// peerAnswer is what the peer answers.
type peerAnswer struct {
	status   int
	body     []byte
	replayed bool
}

// errPeerKeyReused: the key holds the answer to another request.
var errPeerKeyReused = errors.New("idempotency key reused with another request")

// peerHandler serves peerPath.
func peerHandler(pool *pgxpool.Pool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || len(key) > 255 {
			http.Error(w, "Idempotency-Key required", http.StatusBadRequest)
			return
		}
		in, ok := bareInput(w, r)
		if !ok {
			return
		}
		normalised, _ := json.Marshal(in)
		hash := sha256.Sum256(normalised)
		tenant := r.Context().Value(bareTenant{}).(uuid.UUID)
		a, err := peerBook(r.Context(), pool, tenant, key, hash[:], in)
		switch {
		case errors.Is(err, errPeerKeyReused):
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		case err != nil:
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if a.replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(a.status)
		w.Write(a.body) //nolint:errcheck
	}
}

// peerBook is the peer's transaction for one request with key.
func peerBook(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID, key string, hash []byte, in booking.BookInput) (peerAnswer, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return peerAnswer{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after the commit
	id, err := uuid.NewV7()
	if err != nil {
		return peerAnswer{}, err
	}
	if _, err := tx.Exec(ctx, peerInsertKey, id, tenant, key, hash); err != nil {
		return peerAnswer{}, err
	}
	var rowID uuid.UUID
	var stored []byte
	var code *int32
	var body []byte
	if err := tx.QueryRow(ctx, peerLockKey, tenant, key).Scan(&rowID, &stored, &code, &body); err != nil {
		return peerAnswer{}, err
	}
	if !bytes.Equal(stored, hash) {
		return peerAnswer{}, errPeerKeyReused
	}
	if code != nil { // a completed key: its stored response
		return peerAnswer{status: int(*code), body: body, replayed: true}, tx.Commit(ctx)
	}
	// The row is the one this transaction inserted: the key is new.
	row, err := dbsqlc.New(tx).BookSlot(ctx, dbsqlc.BookSlotParams{
		ID: uuid.Must(uuid.NewV7()), TenantID: tenant, CustomerID: op.MustUUID(in.CustomerID),
		SlotID: op.MustUUID(in.SlotID), Service: in.Service, ActionID: rowID,
	})
	if err != nil {
		return peerAnswer{}, err
	}
	a := peerAnswer{status: http.StatusUnprocessableEntity, body: []byte(`{"error":"slot unavailable"}`)}
	if row.CustomerFound && row.ID != nil {
		a.status = http.StatusCreated
		a.body, err = json.Marshal(wire.FromAppointment(oncecall.Appointment{
			ID: *row.ID, CustomerID: *row.CustomerID, SlotID: *row.SlotID, Service: *row.Service,
			Status: *row.Status, StartsAt: row.StartsAt.UTC(), EndsAt: row.EndsAt.UTC(),
		}))
		if err != nil {
			return peerAnswer{}, err
		}
	}
	if _, err := tx.Exec(ctx, peerStoreResponse, rowID, a.status, a.body); err != nil {
		return peerAnswer{}, err
	}
	return a, tx.Commit(ctx)
}
