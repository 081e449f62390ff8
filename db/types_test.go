package db_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/pgtest"
)

// Ids and jsonb read through a pool configured as oncecall's come back as
// PostgreSQL holds them, in the extended protocol (binary results, the
// copying scan plans) and in the simple one (text results, pgx's own plans,
// as behind PgBouncer): an id, NULL as the zero id or a nil pointer, jsonb
// as PostgreSQL's text of it, JSON null as "null", SQL NULL as nil, and
// jsonb into a map still decoded.
func TestConfiguredPoolReadsIdsAndJSONBAsStored(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	for name, mode := range map[string]pgx.QueryExecMode{
		"extended": pgx.QueryExecModeCacheStatement,
		"simple":   pgx.QueryExecModeSimpleProtocol,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.DefaultQueryExecMode = mode
			db.Configure(cfg)
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)

			id := uuid.New()
			var (
				gotID, nullID    uuid.UUID
				nullIDPtr        = &id
				idPtr            *uuid.UUID
				raw, null        json.RawMessage
				sqlNull          = json.RawMessage("x")
				sqlNullPtr       = &raw
				decoded          map[string]any
				wantRaw, wantMap = `{"a": [1, 2.50], "b": "é\"", "c": {}}`, map[string]any{"a": []any{1.0, 2.5}, "b": "é\"", "c": map[string]any{}}
			)
			err = pool.QueryRow(t.Context(), `SELECT $1::uuid, NULL::uuid, NULL::uuid, $1::uuid,
				'{"c": {}, "b": "é\"", "a": [1, 2.50]}'::jsonb, 'null'::jsonb, NULL::jsonb, NULL::jsonb,
				'{"c": {}, "b": "é\"", "a": [1, 2.50]}'::jsonb`, id).
				Scan(&gotID, &nullID, &nullIDPtr, &idPtr, &raw, &null, &sqlNull, &sqlNullPtr, &decoded)
			if err != nil {
				t.Fatal(err)
			}
			if gotID != id || idPtr == nil || *idPtr != id {
				t.Errorf("id read as %v and %v, want %v", gotID, idPtr, id)
			}
			if nullID != (uuid.UUID{}) || nullIDPtr != nil {
				t.Errorf("NULL id read as %v and %v, want the zero id and nil", nullID, nullIDPtr)
			}
			if string(raw) != wantRaw || string(null) != "null" {
				t.Errorf("jsonb read as %s and %s, want %s and null", raw, null, wantRaw)
			}
			if sqlNull != nil || sqlNullPtr != nil {
				t.Errorf("SQL NULL jsonb read as %q and %v, want nil", sqlNull, sqlNullPtr)
			}
			if !reflect.DeepEqual(decoded, wantMap) {
				t.Errorf("jsonb into a map read as %v, want %v", decoded, wantMap)
			}
		})
	}
}

// BenchmarkScanTypes is what reading an id and a booking's answer as jsonb
// into a json.RawMessage costs pgx's type map, as it comes by default and
// as Configure registers it: every action read (a replay's, a first
// execution's returned row) reads three ids and its request as jsonb.
//
//	go test ./db -run '^$' -bench ScanTypes -benchmem
func BenchmarkScanTypes(b *testing.B) {
	id := uuid.New()
	answer := append([]byte{1}, `{"id": "`+id.String()+`", "slot": {"id": "`+id.String()+`", "ends_at": "2026-12-02T10:30:00Z", "starts_at": "2026-12-02T10:00:00Z"}, "state": "active", "service": "consult", "customer_id": "`+id.String()+`"}`...)
	for name, m := range map[string]*pgtype.Map{"default": pgtype.NewMap(), "configured": configuredMap()} {
		b.Run(name, func(b *testing.B) {
			var (
				u   uuid.UUID
				raw json.RawMessage
			)
			for b.Loop() {
				if err := m.Scan(pgtype.UUIDOID, pgtype.BinaryFormatCode, id[:], &u); err != nil {
					b.Fatal(err)
				}
				if err := m.Scan(pgtype.JSONBOID, pgtype.BinaryFormatCode, answer, &raw); err != nil {
					b.Fatal(err)
				}
			}
			if u != id || string(raw) != string(answer[1:]) {
				b.Fatalf("read %v and %s", u, raw)
			}
		})
	}
}

func configuredMap() *pgtype.Map {
	m := pgtype.NewMap()
	db.RegisterTypes(m)
	return m
}
