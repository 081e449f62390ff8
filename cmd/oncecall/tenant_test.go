package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Not parallel: it changes the environment.
func TestTenantCreateSetsAValidTimezone(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	zoneOf := func(id string) string {
		t.Helper()
		var zone string
		if err := conn.QueryRow(ctx, "SELECT timezone FROM tenants WHERE id = $1", uuid.MustParse(id)).Scan(&zone); err != nil {
			t.Fatal(err)
		}
		return zone
	}
	create := func(args ...string) (map[string]string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"tenant", "create", "--json"}, args...), &out, &out)
		var created map[string]string
		if err == nil {
			if err := json.Unmarshal(out.Bytes(), &created); err != nil {
				t.Fatalf("tenant create printed %q", out.String())
			}
		}
		return created, err
	}

	london, err := create("--name", "salon", "--timezone", "Europe/London")
	if err != nil || london["timezone"] != "Europe/London" || zoneOf(london["tenant_id"]) != "Europe/London" {
		t.Fatalf("--timezone Europe/London: %v %v", london, err)
	}
	plain, err := create("--name", "plain")
	if err != nil || zoneOf(plain["tenant_id"]) != "UTC" {
		t.Fatalf("no --timezone: %v %v", plain, err)
	}
	for _, bad := range []string{"Mars/Olympus", "Local", "", "europe/london"} {
		if _, err := create("--name", "bad", "--timezone", bad); err == nil || !strings.Contains(err.Error(), "--timezone") {
			t.Errorf("--timezone %q: %v", bad, err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM tenants WHERE name = 'bad'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused timezones created %d tenants (%v)", n, err)
	}
}

// The binary embeds the zone database, so tenants' timezones load on a
// machine or in the distroless image without one.
func TestBinaryEmbedsTheZoneDatabase(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if imp.Path.Value == `"time/tzdata"` && imp.Name != nil && imp.Name.Name == "_" {
			return
		}
	}
	t.Fatal(`cmd/oncecall/main.go does not import _ "time/tzdata"`)
}

// Not parallel: it changes the environment. A tenant's Stripe account is
// set at creation or later, checked, and cleared.
func TestTenantStripeAccountIsStoredWithTheTenant(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	accountOf := func(id string) *string {
		t.Helper()
		var acct *string
		if err := conn.QueryRow(ctx, "SELECT stripe_account FROM tenants WHERE id = $1", uuid.MustParse(id)).Scan(&acct); err != nil {
			t.Fatal(err)
		}
		return acct
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"tenant", "create", "--json", "--name", "shop", "--stripe-account", "acct_1Shop"}, &out, &out); err != nil {
		t.Fatalf("create with --stripe-account: %v %s", err, out.String())
	}
	var created map[string]string
	if err := json.Unmarshal(out.Bytes(), &created); err != nil {
		t.Fatal(err)
	}
	id := created["tenant_id"]
	if a := accountOf(id); a == nil || *a != "acct_1Shop" {
		t.Fatalf("stripe_account after create: %v", a)
	}
	if err := run(ctx, []string{"tenant", "stripe-account", "--tenant", id, "--account", "acct_2Other"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if a := accountOf(id); a == nil || *a != "acct_2Other" {
		t.Fatalf("stripe_account after set: %v", a)
	}
	for _, bad := range []string{"sk_live_123", "acct_", "acct_1 x"} {
		if err := run(ctx, []string{"tenant", "stripe-account", "--tenant", id, "--account", bad}, &out, &out); err == nil {
			t.Errorf("--account %q accepted", bad)
		}
	}
	if err := run(ctx, []string{"tenant", "stripe-account", "--tenant", uuid.NewString(), "--account", "acct_1"}, &out, &out); err == nil {
		t.Error("an unknown tenant accepted")
	}
	if err := run(ctx, []string{"tenant", "stripe-account", "--tenant", id}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if a := accountOf(id); a != nil {
		t.Fatalf("stripe_account after clearing: %v", *a)
	}
}

// Not parallel: it changes the environment. A tenant's Twilio sender is a
// number or a Messaging Service, checked, replaced and cleared.
func TestTwilioTenantSenderIsStoredWithTheTenant(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	senderOf := func(id string) string {
		t.Helper()
		var from, service *string
		if err := conn.QueryRow(ctx, "SELECT twilio_from, twilio_messaging_service FROM tenants WHERE id = $1", uuid.MustParse(id)).Scan(&from, &service); err != nil {
			t.Fatal(err)
		}
		deref := func(p *string) string {
			if p == nil {
				return "-"
			}
			return *p
		}
		return deref(from) + "/" + deref(service)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"tenant", "create", "--json", "--name", "shop"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	var created map[string]string
	if err := json.Unmarshal(out.Bytes(), &created); err != nil {
		t.Fatal(err)
	}
	id := created["tenant_id"]
	if err := run(ctx, []string{"tenant", "twilio-sender", "--tenant", id, "--from", "+14155550100"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if got := senderOf(id); got != "+14155550100/-" {
		t.Fatalf("sender after --from: %s", got)
	}
	service := "MG0123456789abcdef0123456789abcdef"
	if err := run(ctx, []string{"tenant", "twilio-sender", "--tenant", id, "--messaging-service", service}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if got := senderOf(id); got != "-/"+service {
		t.Fatalf("sender after --messaging-service: %s", got)
	}
	for _, bad := range [][]string{{"--from", "4155550100"}, {"--messaging-service", "MG123"}, {"--from", "+14155550100", "--messaging-service", service}} {
		if err := run(ctx, append([]string{"tenant", "twilio-sender", "--tenant", id}, bad...), &out, &out); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if got := senderOf(id); got != "-/"+service {
		t.Fatalf("a refused change changed the sender: %s", got)
	}
	if err := run(ctx, []string{"tenant", "twilio-sender", "--tenant", uuid.NewString(), "--from", "+14155550100"}, &out, &out); err == nil {
		t.Error("an unknown tenant accepted")
	}
	if err := run(ctx, []string{"tenant", "twilio-sender", "--tenant", id}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if got := senderOf(id); got != "-/-" {
		t.Fatalf("sender after clearing: %s", got)
	}
}

// Not parallel: it changes the environment. tenant create takes a locale
// (by default the zone's: en-US for a zone of the United States, en-GB
// otherwise); tenant update changes the timezone and the locale, each
// checked, of a tenant named by id or name, and a refused change changes
// nothing.
func TestTenantUpdateCommand(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	settings := func(id string) string {
		t.Helper()
		var zone, locale string
		if err := conn.QueryRow(ctx, "SELECT timezone, locale FROM tenants WHERE id = $1", uuid.MustParse(id)).Scan(&zone, &locale); err != nil {
			t.Fatal(err)
		}
		return zone + " " + locale
	}
	create := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, append([]string{"tenant", "create", "--json"}, args...), &out, &out); err != nil {
			t.Fatalf("tenant create %v: %v %s", args, err, out.String())
		}
		var created map[string]string
		if err := json.Unmarshal(out.Bytes(), &created); err != nil {
			t.Fatalf("tenant create printed %q", out.String())
		}
		return created["tenant_id"]
	}
	update := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"tenant", "update"}, args...), &out, &out)
		return out.String(), err
	}

	chicago := create("--name", "chicago", "--timezone", "America/Chicago")
	if got := settings(chicago); got != "America/Chicago en-US" {
		t.Fatalf("a Chicago tenant: %s, want en-US by default", got)
	}
	if got := settings(create("--name", "london", "--timezone", "Europe/London")); got != "Europe/London en-GB" {
		t.Fatalf("a London tenant: %s, want en-GB by default", got)
	}
	if got := settings(create("--name", "brit-in-chicago", "--timezone", "America/Chicago", "--locale", "en-GB")); got != "America/Chicago en-GB" {
		t.Fatalf("--locale en-GB: %s", got)
	}

	out, err := update("--tenant", chicago, "--timezone", "Europe/Paris", "--locale", "en-GB")
	if err != nil || settings(chicago) != "Europe/Paris en-GB" || !strings.Contains(out, "Europe/Paris") || !strings.Contains(out, "en-GB") {
		t.Fatalf("update both: %v %q, now %s", err, out, settings(chicago))
	}
	if _, err := update("--tenant", "chicago", "--locale", "en-US"); err != nil || settings(chicago) != "Europe/Paris en-US" {
		t.Fatalf("update the locale by name: %v, now %s", err, settings(chicago))
	}
	if _, err := update("--tenant", chicago, "--timezone", "America/New_York"); err != nil || settings(chicago) != "America/New_York en-US" {
		t.Fatalf("update the timezone: %v, now %s", err, settings(chicago))
	}
	for _, bad := range [][]string{
		{"--tenant", chicago, "--timezone", "Mars/Olympus"},
		{"--tenant", chicago, "--locale", "fr-FR"},
		{"--tenant", chicago, "--timezone", "Europe/London", "--locale", "english"},
		{"--tenant", chicago},
		{"--timezone", "Europe/London"},
		{"--tenant", uuid.NewString(), "--locale", "en-GB"},
	} {
		if _, err := update(bad...); err == nil {
			t.Errorf("tenant update %v accepted", bad)
		}
	}
	if got := settings(chicago); got != "America/New_York en-US" {
		t.Fatalf("refused updates changed the tenant: %s", got)
	}

	// The confirmation gate: off by default, on and off again by name.
	gate := func() bool {
		t.Helper()
		var on bool
		if err := conn.QueryRow(ctx, "SELECT caller_confirmation FROM tenants WHERE id = $1", uuid.MustParse(chicago)).Scan(&on); err != nil {
			t.Fatal(err)
		}
		return on
	}
	if gate() {
		t.Fatal("a new tenant's confirmation gate is on")
	}
	if _, err := update("--tenant", chicago, "--caller-confirmation", "yes"); err == nil || gate() {
		t.Fatalf("--caller-confirmation yes: %v, gate %v", err, gate())
	}
	if out, err := update("--tenant", "chicago", "--caller-confirmation", "on"); err != nil || !gate() || !strings.Contains(out, "caller confirmation on") ||
		settings(chicago) != "America/New_York en-US" {
		t.Fatalf("--caller-confirmation on: %v %q, gate %v, now %s", err, out, gate(), settings(chicago))
	}
	if _, err := update("--tenant", chicago, "--caller-confirmation", "off"); err != nil || gate() {
		t.Fatalf("--caller-confirmation off: %v, gate %v", err, gate())
	}
}
