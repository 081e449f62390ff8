package api_test

import (
	"bytes"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// TestThroughPgBouncer runs the core flows with oncecall's pool behind
// PgBouncer in transaction pooling mode, where a server connection is lent
// per transaction and a named prepared statement does not outlive it
// (PgBouncer 1.18, Debian's), in each pgx exec mode docs/pgbouncer.md
// names. The claim's BEGIN travels in one batch and the completion's COMMIT
// in another: the transaction between them must stay on one server
// connection, and the same key sent at once must still make one action.
func TestThroughPgBouncer(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cache_describe", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, providersim.Config{})
			e := apptest.Start(t, func(c *app.Config) {
				// The database timeouts live on the database behind PgBouncer
				// (docs/pgbouncer.md): it drops them as startup parameters.
				conn, err := pgx.Connect(t.Context(), c.DatabaseURL)
				if err != nil {
					t.Fatal(err)
				}
				for _, set := range []string{"lock_timeout = '2s'", "statement_timeout = '5s'", "idle_in_transaction_session_timeout = '10s'"} {
					if _, err := conn.Exec(t.Context(), "ALTER DATABASE "+pgx.Identifier{conn.Config().Database}.Sanitize()+" SET "+set); err != nil {
						t.Fatal(err)
					}
				}
				conn.Close(t.Context())
				c.MigrateDatabaseURL = c.DatabaseURL
				c.DatabaseURL = pgtest.Bouncer(t, c.DatabaseURL) + "&default_query_exec_mode=" + mode
				c.Providers = provider.Set{provider.Messaging: provider.NewHTTP(provider.HTTPConfig{
					BaseURL: sim.URL, Timeout: 5 * time.Second,
					Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
				})}
			})
			tenant, key := e.Tenant("acme")
			customer := e.Customer(tenant.ID)
			book := func(idem string, slot uuid.UUID) apptest.Response {
				return e.Post("/v1/appointments", key, idem, map[string]any{"customer_id": customer, "slot_id": slot})
			}

			if n := e.Count(`SELECT count(*) FROM pg_settings WHERE (name, setting) IN
				(('lock_timeout', '2000'), ('statement_timeout', '5000'), ('idle_in_transaction_session_timeout', '10000'))`); n != 3 {
				t.Fatalf("%d of the 3 database timeouts hold behind PgBouncer", n)
			}

			// First execution, then its replay, byte for byte.
			slot := e.Slot(tenant.ID, 1)
			first := book("pgb-first", slot)
			if first.Status != http.StatusCreated || first.Replayed() {
				t.Fatalf("first booking: %d %s\nserver log:\n%s", first.Status, first.Body, e.Logs.String())
			}
			again := book("pgb-first", slot)
			if again.Status != http.StatusCreated || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
				t.Fatalf("replay: %d %s\nfirst: %s", again.Status, again.Body, first.Body)
			}
			if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slot); n != 1 {
				t.Fatalf("appointments for the slot = %d, want 1", n)
			}

			// The same key from many clients at once: one action, one row.
			slot2 := e.Slot(tenant.ID, 2)
			const n = 20
			answers := make([]apptest.Response, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() { <-start; answers[i] = book("pgb-storm", slot2) })
			}
			close(start)
			wg.Wait()
			firsts := 0
			for _, a := range answers {
				switch {
				case a.Status == http.StatusCreated && !a.Replayed():
					firsts++
				case a.Status == http.StatusCreated, a.Status == http.StatusConflict:
				default:
					t.Errorf("same key at once: %d %s", a.Status, a.Body)
				}
			}
			if firsts != 1 {
				t.Fatalf("%d first executions of one key, want 1", firsts)
			}
			if n := e.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'pgb-storm'"); n != 1 {
				t.Fatalf("actions for one key = %d, want 1", n)
			}
			if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slot2); n != 1 {
				t.Fatalf("appointments for the stormed slot = %d, want 1", n)
			}

			// A rejection is stored and replayed like any outcome.
			taken := book("pgb-taken", slot)
			if taken.Status != http.StatusUnprocessableEntity || taken.JSON(t)["code"] != "SLOT_UNAVAILABLE" {
				t.Fatalf("booking a taken slot: %d %s", taken.Status, taken.Body)
			}
			if r := book("pgb-taken", slot); r.Status != http.StatusUnprocessableEntity || !r.Replayed() || !bytes.Equal(r.Body, taken.Body) {
				t.Fatalf("replayed rejection: %d %s", r.Status, r.Body)
			}
			if n := e.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'pgb-taken' AND outcome = 'rejected'"); n != 1 {
				t.Fatalf("rejected actions = %d, want 1", n)
			}

			// A remote step: the claim and its steps commit, the driver sends
			// the message to the simulator and completes the action.
			msg := map[string]any{"to": "+14155550101", "channel": "sms", "template": "generic",
				"variables": map[string]string{"body": "Your table is ready."}}
			sent := e.Post("/v1/messages", key, "pgb-message", msg)
			if sent.Status/100 != 2 || sent.JSON(t)["outcome"] != "confirmed" {
				t.Fatalf("remote message: %d %s", sent.Status, sent.Body)
			}
			if r := e.Post("/v1/messages", key, "pgb-message", msg); !r.Replayed() || !bytes.Equal(r.Body, sent.Body) {
				t.Fatalf("replayed remote message: %d %s", r.Status, r.Body)
			}
			if n := len(sim.Ledger(provider.Messaging)); n != 1 {
				t.Fatalf("the messaging provider received %d writes, want 1", n)
			}
			if n := e.Count("SELECT count(*) FROM action_steps s JOIN actions a ON a.id = s.action_id WHERE a.idempotency_key = 'pgb-message' AND s.state = 'succeeded'"); n != 1 {
				t.Fatalf("succeeded steps of the message = %d, want 1", n)
			}
		})
	}
}
