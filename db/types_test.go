package db_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
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

// An action's other columns (text, int4 and timestamptz, NULL or not, into
// the pointers sqlc's nullable fields are, and into a time.Time) read
// through a pool configured as oncecall's come back as pgx reads them by
// default, in the extended protocol and in the simple one; a NULL or an
// infinite time into a time.Time is refused by both.
func TestConfiguredPoolReadsAnActionsColumnsAsPgxDoes(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	type row struct {
		Text, NullText, Varchar *string
		Int, NullInt            *int32
		Time                    time.Time
		TimePtr, NullTime       *time.Time
	}
	const query = `SELECT 'é x'::text, NULL::text, 'v'::varchar, -7::int4, NULL::int4,
		'1999-12-31 23:59:59.999999+00'::timestamptz, '2026-12-02 13:30:00.123456+02'::timestamptz, NULL::timestamptz`
	read := func(t *testing.T, pool *pgxpool.Pool) row {
		var r row
		err := pool.QueryRow(t.Context(), query).Scan(&r.Text, &r.NullText, &r.Varchar, &r.Int, &r.NullInt, &r.Time, &r.TimePtr, &r.NullTime)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	refused := func(t *testing.T, pool *pgxpool.Pool) []error {
		var tm time.Time
		return []error{
			pool.QueryRow(t.Context(), `SELECT NULL::timestamptz`).Scan(&tm),
			pool.QueryRow(t.Context(), `SELECT 'infinity'::timestamptz`).Scan(&tm),
			pool.QueryRow(t.Context(), `SELECT '-infinity'::timestamptz`).Scan(&tm),
		}
	}
	for name, mode := range map[string]pgx.QueryExecMode{
		"extended": pgx.QueryExecModeCacheStatement,
		"simple":   pgx.QueryExecModeSimpleProtocol,
	} {
		t.Run(name, func(t *testing.T) {
			pools := map[bool]*pgxpool.Pool{}
			for _, configured := range []bool{false, true} {
				cfg, err := pgxpool.ParseConfig(url)
				if err != nil {
					t.Fatal(err)
				}
				cfg.ConnConfig.DefaultQueryExecMode = mode
				if configured {
					db.Configure(cfg)
				}
				pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				pools[configured] = pool
			}
			got, want := read(t, pools[true]), read(t, pools[false])
			if !reflect.DeepEqual(got, want) {
				t.Errorf("configured pool read\n%s, pgx reads\n%s", show(got), show(want))
			}
			if got.NullText != nil || got.NullInt != nil || got.NullTime != nil || got.Text == nil || *got.Text != "é x" || got.Int == nil || *got.Int != -7 {
				t.Errorf("read %s", show(got))
			}
			byPgx := refused(t, pools[false])
			for i, err := range refused(t, pools[true]) {
				if err == nil || byPgx[i] == nil {
					t.Errorf("NULL, infinity or -infinity into a time.Time (%d): configured %v, pgx %v", i, err, byPgx[i])
				}
			}
		})
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Reading an action's nullable columns and times in binary costs an
// allocation for the value read (a string's bytes and its pointer, a
// number's, a time's) and nothing for the plan, and sending an id costs
// none.
func TestActionColumnPlansAllocateOnlyTheValue(t *testing.T) {
	m := configuredMap()
	ts, err := pgtype.NewMap().Encode(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, time.Date(2026, 12, 2, 13, 30, 0, 123456000, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	var (
		s   *string
		n   *int32
		tm  time.Time
		tp  *time.Time
		u   *uuid.UUID
		raw json.RawMessage
	)
	for _, c := range []struct {
		what   string
		oid    uint32
		src    []byte
		dst    any
		allocs float64
	}{
		{"text into *string", pgtype.TextOID, []byte("confirmed"), &s, 2},
		{"NULL text into *string", pgtype.TextOID, nil, &s, 0},
		{"varchar into *string", pgtype.VarcharOID, []byte("v"), &s, 2},
		{"int4 into *int32", pgtype.Int4OID, []byte{0, 0, 0, 201}, &n, 1},
		{"timestamptz into time.Time", pgtype.TimestamptzOID, ts, &tm, 0},
		{"timestamptz into *time.Time", pgtype.TimestamptzOID, ts, &tp, 1},
		{"uuid into *uuid.UUID", pgtype.UUIDOID, id[:], &u, 1},
		{"jsonb into json.RawMessage", pgtype.JSONBOID, []byte("\x01{}"), &raw, 1},
	} {
		got := testing.AllocsPerRun(100, func() {
			if err := m.Scan(c.oid, pgtype.BinaryFormatCode, c.src, c.dst); err != nil {
				t.Fatal(err)
			}
		})
		if got > c.allocs {
			t.Errorf("%s: %.0f allocations, want at most %.0f", c.what, got, c.allocs)
		}
	}
	buf := make([]byte, 0, 16)
	var arg any = id // as a query's arguments hold it
	if got := testing.AllocsPerRun(100, func() {
		if _, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, arg, buf); err != nil {
			t.Fatal(err)
		}
	}); got > 0 {
		t.Errorf("sending an id: %.0f allocations, want none", got)
	}
	if sent, _ := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, id, nil); string(sent) != string(id[:]) {
		t.Errorf("an id sent as %x, want %x", sent, id[:])
	}
	if s == nil || *s != "v" || *n != 201 || !tm.Equal(*tp) || tm.UnixMicro() != 1796218200123456 || *u != id || string(raw) != "{}" {
		t.Errorf("read %v %d %v %v %v %s", s, *n, tm, tp, u, raw)
	}
}
