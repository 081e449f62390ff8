package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestConsoleAndCLIResolutionsLeaveIdenticalTimelines settles two bookings
// left unknown by the same provider fault, one in the operator console and
// one with `oncecall actions resolve`, with the same evidence: the two
// actions, their steps and their timelines are the same but for their own
// ids, slots and provider references.
func TestConsoleAndCLIResolutionsLeaveIdenticalTimelines(t *testing.T) {
	const token = "identical-timelines-token-3b9f6c0a"
	sim := simtest.Start(t, providersim.Config{})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{
			BaseURL: sim.URL, Timeout: 2 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
		})}
		c.ReconcileDisabled = true
		c.OperatorToken = token
	})
	tenant, key := e.Tenant("twins")
	customer := e.Customer(tenant.ID)
	type booking struct {
		id        uuid.UUID
		slot, ref string
	}
	book := func(idemKey string, n int) booking {
		t.Helper()
		sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
		slot := e.Slot(tenant.ID, n)
		r := e.Post("/v1/appointments", key, idemKey, map[string]any{"customer_id": customer, "slot_id": slot})
		if r.Status != http.StatusAccepted || r.JSON(t)["state"] != "unknown" {
			t.Fatalf("booking with a dropped answer: %d %s", r.Status, r.Body)
		}
		id := uuid.MustParse(r.JSON(t)["action_id"].(string))
		steps, err := e.Store.Steps(t.Context(), id)
		if err != nil || len(steps) != 1 {
			t.Fatalf("steps: %v %v", steps, err)
		}
		for _, l := range sim.Ledger(provider.Calendar) {
			if l.Key == steps[0].ProviderKey {
				return booking{id: id, slot: slot.String(), ref: l.ID}
			}
		}
		t.Fatalf("the provider has no write with key %s", steps[0].ProviderKey)
		return booking{}
	}
	viaConsole, viaCLI := book("twin-console", 1), book("twin-cli", 2)
	const note = "booking found in the calendar admin"

	// The console, as a browser posts its form.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, step := range []struct {
		path string
		form url.Values
		want string
	}{
		{"/console/signin", url.Values{"token": {token}, "name": {"ana"}}, "/console/"},
		{"/console/actions/" + viaConsole.id.String() + "/resolve",
			url.Values{"outcome": {"confirmed"}, "provider_ref": {viaConsole.ref}, "note": {note}},
			"/console/actions/" + viaConsole.id.String() + "?resolved=confirmed"},
	} {
		resp, err := browser.PostForm(e.URL+step.path, step.form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != step.want {
			t.Fatalf("POST %s: %d %v", step.path, resp.StatusCode, resp.Header)
		}
	}

	// The command line.
	t.Setenv("DATABASE_URL", e.DBURL)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"actions", "resolve", viaCLI.id.String(), "--outcome", "confirmed",
		"--provider-ref", viaCLI.ref, "--note", note, "--by", "ana"}, &out, &out); err != nil {
		t.Fatalf("actions resolve: %v\n%s", err, out.String())
	}

	record := func(b booking) string {
		t.Helper()
		var sb strings.Builder
		rows, err := e.Store.Pool().Query(t.Context(), `
			SELECT 'action', state || ' ' || coalesce(outcome, '') || ' ' || coalesce(reason, '') || ' ' || coalesce(http_status::text, '')
			       || ' ' || needs_operator::text || ' ' || coalesce(resource_id, '') || ' ' || coalesce(convert_from(result, 'UTF8'), '')
			FROM actions WHERE id = $1
			UNION ALL
			(SELECT 'step', name || ' ' || state || ' ' || coalesce(provider_ref, '') || ' ' || coalesce(reject_code, '')
			       || ' ' || attempts || ' ' || checks || ' ' || coalesce(last_error, '')
			 FROM action_steps WHERE action_id = $1 ORDER BY seq)
			UNION ALL
			(SELECT 'event', kind || ' ' || coalesce(step, '') || ' ' || detail::text FROM action_events WHERE action_id = $1 ORDER BY id)`, b.id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var what, line string
			if err := rows.Scan(&what, &line); err != nil {
				t.Fatal(err)
			}
			line = strings.NewReplacer(b.id.String(), "<action>", b.slot, "<slot>", b.ref, "<ref>").Replace(line)
			fmt.Fprintf(&sb, "%s %s\n", what, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	console, cli := record(viaConsole), record(viaCLI)
	if console != cli {
		t.Fatalf("the console and the command line left different records:\nconsole:\n%s\ncommand line:\n%s", console, cli)
	}
	if !strings.Contains(console, "event resolved_by_operator") || !strings.Contains(console, "action completed confirmed") ||
		!strings.Contains(console, `"by": "ana"`) {
		t.Fatalf("the resolution is not recorded:\n%s", console)
	}
	t.Logf("both records:\n%s", console)
}
