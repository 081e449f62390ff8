package db_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// A connection that cannot be opened sent nothing, so nothing was stored:
// each way the store commits answers "nothing was stored", never "outcome
// unknown". The servers: none listening (connection refused), and a
// standby refused by target_session_attrs=read-write (a demoted primary
// looks the same to a client).
func TestConnectFailureIsNothingStored(t *testing.T) {
	pair := pgtest.SyncPair(t)
	closed := closedPort(t)
	for _, tc := range []struct{ name, url string }{
		{"refused", "postgres://postgres@" + closed + "/oncecall?sslmode=disable"},
		{"read-only", pair.Standby.URL("oncecall") + "&target_session_attrs=read-write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			db.Configure(cfg)
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			store := db.New(pool)
			tenant := uuid.New()
			claim := db.Claim{ID: uuid.New(), TenantID: tenant, Key: "k", Operation: "appointment.book", Fingerprint: "f", Request: []byte("{}")}
			st := db.NewStatement(tenant)
			st.Book(uuid.New(), uuid.New(), "")
			_, _, errOnce := store.ClaimOnce(t.Context(), claim, time.Second, st)
			_, errTx := store.ClaimTx(t.Context(), t.Context(), claim, func(*db.Tx) (*db.Completion, error) { return nil, nil })
			errInTx := store.InTx(t.Context(), func(*db.Tx) error { return nil })
			for what, err := range map[string]error{"ClaimOnce": errOnce, "ClaimTx": errTx, "InTx": errInTx} {
				if err == nil {
					t.Fatalf("%s succeeded without a server", what)
				}
				if db.OutcomeUnknown(err) {
					t.Errorf("%s: a failed connect is answered as an unknown outcome: %v", what, err)
				}
				fe := fault.As(db.Fault(err))
				if fe.Code != fault.Unavailable || !strings.Contains(fe.Message, "nothing was stored") {
					t.Errorf("%s: answered %v, want 503 saying nothing was stored", what, db.Fault(err))
				}
			}
		})
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
