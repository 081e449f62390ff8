package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Not parallel: it changes the environment. calendar connect stores where
// the secret is (never the secret) and the practitioners' calendars; bad
// usage stores nothing; check reads one day of each calendar with the
// secret read here and says what it found; show and disconnect.
func TestCalendarConnectCheckShowDisconnect(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := db.New(pool)
	tenant, _, err := store.CreateTenantWith(ctx, db.NewTenant{Name: "clinic", Timezone: "Europe/Madrid", Scope: oncecall.ScopeFull})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.CreatePractitioner(ctx, oncecall.NewPractitioner{TenantID: tenant.ID, Name: "Ana Ruiz"}); err != nil {
		t.Fatal(err)
	}
	sim := calsimtest.Start(t, "google")
	key, err := calsimtest.GoogleKey(sim.URL + "/token")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CLINIC_GOOGLE_KEY", string(key))

	var out bytes.Buffer
	base := []string{"calendar", "connect", "--tenant", "clinic", "--base-url", sim.URL + "/calendar/v3"}
	for _, args := range [][]string{
		append(base, "--provider", "google", "--map", "Ana Ruiz=ana@clinic.example"),                                                           // no credentials
		append(base, "--provider", "google", "--credentials-env", "CLINIC_GOOGLE_KEY", "--credentials-file", "/k.json", "--map", "Ana Ruiz=a"), // both
		append(base, "--provider", "google", "--credentials-env", "CLINIC_GOOGLE_KEY"),                                                         // no calendar
		append(base, "--provider", "google", "--credentials-env", "CLINIC_GOOGLE_KEY", "--map", "Nobody=x@clinic.example"),                     // no such practitioner
		append(base, "--provider", "calcom", "--credentials-env", "CLINIC_GOOGLE_KEY", "--map", "Ana Ruiz=not-a-number"),                       // cal.com ids are numbers
		append(base, "--provider", "microsoft", "--credentials-env", "CLINIC_GOOGLE_KEY", "--map", "Ana Ruiz=ana@clinic"),                      // no directory/client
		append(base, "--provider", "outlook", "--credentials-env", "CLINIC_GOOGLE_KEY", "--map", "Ana Ruiz=ana@clinic"),                        // no such provider
		append(base, "--provider", "google", "--credentials-env", "1BAD", "--map", "Ana Ruiz=ana@clinic"),                                      // not a variable
	} {
		if err := run(ctx, args, &out, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := store.CalendarConnection(ctx, tenant.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("bad usage stored a connection: %v", err)
	}

	out.Reset()
	args := append(base, "--provider", "google", "--credentials-env", "CLINIC_GOOGLE_KEY",
		"--calendar", "front-desk@clinic.example", "--map", "ana ruiz=ana@clinic.example")
	if err := run(ctx, args, &out, &out); err != nil {
		t.Fatalf("connect: %v\n%s", err, out.String())
	}
	conn, err := store.CalendarConnection(ctx, tenant.ID)
	if err != nil || conn.Credentials != "env:CLINIC_GOOGLE_KEY" || conn.Provider != "google" {
		t.Fatalf("stored connection %+v, %v", conn, err)
	}
	maps, err := store.CalendarMappings(ctx, tenant.ID)
	if err != nil || len(maps) != 2 {
		t.Fatalf("stored mappings %+v, %v; want the single calendar and Ana's", maps, err)
	}

	// A walk-in at 10:00 Madrid time on the day checked.
	madrid, _ := time.LoadLocation("Europe/Madrid")
	day := time.Now().In(madrid).AddDate(0, 0, 3)
	at := time.Date(day.Year(), day.Month(), day.Day(), 10, 0, 0, 0, madrid)
	sim.Call("POST", "/sim/events", map[string]any{"calendar": "ana@clinic.example", "start": at, "end": at.Add(30 * time.Minute), "summary": "walk-in"}, 201, nil)
	out.Reset()
	if err := run(ctx, []string{"calendar", "check", "--tenant", "clinic", "--date", day.Format(time.DateOnly)}, &out, &out); err != nil {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	for _, want := range []string{"Ana Ruiz (every location) -> ana@clinic.example: 1 event(s), 0 booked through oncecall; busy: 10:00-10:30",
		"the single calendar -> front-desk@clinic.example: 0 event(s), 0 booked through oncecall; busy: none"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check printed:\n%s\nwant a line with %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "PRIVATE KEY") {
		t.Fatal("check printed the secret")
	}

	// Without the secret here, check says so and fails.
	t.Setenv("CLINIC_GOOGLE_KEY", "")
	out.Reset()
	if err := run(ctx, []string{"calendar", "check", "--tenant", "clinic"}, &out, &out); err == nil || !strings.Contains(err.Error(), "CLINIC_GOOGLE_KEY is not set") {
		t.Fatalf("check without the secret: %v; want it to name the variable", err)
	}

	out.Reset()
	if err := run(ctx, []string{"calendar", "show", "--tenant", tenant.ID.String()}, &out, &out); err != nil ||
		!strings.Contains(out.String(), "Ana Ruiz (every location) -> ana@clinic.example") || !strings.Contains(out.String(), "env:CLINIC_GOOGLE_KEY") {
		t.Fatalf("show: %v\n%s", err, out.String())
	}
	if err := run(ctx, []string{"calendar", "disconnect", "--tenant", "clinic"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CalendarConnection(ctx, tenant.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("after disconnect: %v", err)
	}
}
