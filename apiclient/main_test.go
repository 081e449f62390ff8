package apiclient_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// exampleOncecall starts oncecall for an example, on a database of its own
// on the test server, with a tenant that has a customer and a free slot. It
// returns the service's URL, the tenant's API key, the two ids and how to
// stop it all. An example has no *testing.T: a failure panics.
func exampleOncecall() (base, key string, customer, slot uuid.UUID, stop func()) {
	ctx := context.Background()
	admin := pgtest.AdminURL()
	if admin == "" {
		panic("no test database server")
	}
	conn, err := pgx.Connect(ctx, admin)
	check(err)
	suffix := make([]byte, 6)
	rand.Read(suffix)
	name := "oncecall_example_" + hex.EncodeToString(suffix)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	check(err)
	u, err := url.Parse(admin)
	check(err)
	u.Path = "/" + name

	serveCtx, cancel := context.WithCancel(ctx)
	m, err := app.Start(serveCtx, app.Config{Addr: "127.0.0.1:0", DatabaseURL: u.String(), Log: zerolog.Nop()})
	check(err)
	served := make(chan error, 1)
	go func() { served <- m.Serve(serveCtx) }()
	tenant, key, err := m.Store().CreateTenant(ctx, "example", "")
	check(err)
	c, err := m.Store().CreateCustomer(ctx, db.NewCustomer{TenantID: tenant.ID, Name: "Ana"})
	check(err)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour)
	s, err := m.Store().CreateSlot(ctx, db.NewSlot{TenantID: tenant.ID, StartsAt: start, EndsAt: start.Add(time.Hour)})
	check(err)
	return "http://" + m.Addr(), key, c.ID, s.ID, func() {
		cancel()
		check(<-served)
		m.Close()
		_, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		conn.Close(ctx)
		check(err)
	}
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
