package app_test

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestDemoBannerCommandsWork runs every curl command the `make run` banner
// prints, twice, against the server it describes, which runs the provider
// simulator for payments and messages as `make run` does: the REST booking,
// the Dasha booking of another slot and the SMS each take effect once, the
// SMS at the simulator, which the banner names. The printed database URL
// reaches the demo tenant's database. A second start prints a banner whose
// commands work too.
func TestDemoBannerCommandsWork(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) { c.Simulate = app.DemoSimulated })
	simURL, simulated := e.Main.Simulator()
	if simURL == "" || !slices.Equal(simulated, []string{provider.Payments, provider.Messaging}) {
		t.Fatalf("the demo's simulator: %q serving %v", simURL, simulated)
	}
	sim := providersim.Admin{BaseURL: simURL}
	for start := 1; start <= 2; start++ {
		var out bytes.Buffer
		if err := e.Main.SeedDemo(t.Context(), &out, "bin/oncecall"); err != nil {
			t.Fatal(err)
		}
		banner := out.String()
		cmds := bannerCurls(banner)
		if len(cmds) != 3 {
			t.Fatalf("start %d: %d curl commands in the banner:\n%s", start, len(cmds), banner)
		}
		for i, c := range cmds {
			first := run(t, e, c)
			again := run(t, e, c)
			if first.Status >= 300 || again.Status != first.Status {
				t.Fatalf("start %d, command %d answered %d then %d: %s\n%s", start, i, first.Status, again.Status, first.Body, c.raw)
			}
			if strings.Contains(string(first.Body), "rejected") {
				t.Fatalf("start %d, command %d was rejected: %s", start, i, first.Body)
			}
			if c.path == "/v1/dasha/tools/book_appointment" {
				if again.JSON(t)["action_id"] != first.JSON(t)["action_id"] {
					t.Fatalf("the Dasha retry made another action: %s", again.Body)
				}
			} else if !again.Replayed() {
				t.Fatalf("command %d's retry was not replayed", i)
			}
		}
		if n := e.Count("SELECT count(*) FROM appointments WHERE status = 'active'"); n != 2*start {
			t.Fatalf("after start %d: %d bookings, want %d", start, n, 2*start)
		}
		sms, err := sim.Ledger(t.Context(), provider.Messaging)
		if err != nil || len(sms) != start {
			t.Fatalf("after start %d: the simulator holds %d SMS (%v), want %d", start, len(sms), err, start)
		}
		if n := e.Count("SELECT count(*) FROM messages"); n != 0 {
			t.Fatalf("after start %d: %d messages recorded for the team, want none: the simulator sent them", start, n)
		}

		m := regexp.MustCompile(`(?m)^DATABASE_URL='([^']+)' bin/oncecall tenant create --name acme$`).FindStringSubmatch(banner)
		if m == nil {
			t.Fatalf("no tenant create command in the banner:\n%s", banner)
		}
		conn, err := pgx.Connect(context.Background(), m[1])
		if err != nil {
			t.Fatalf("the printed database URL: %v", err)
		}
		var demo int
		err = conn.QueryRow(context.Background(), "SELECT count(*) FROM tenants WHERE name = 'demo'").Scan(&demo)
		conn.Close(context.Background())
		if err != nil || demo != 1 {
			t.Fatalf("demo tenants at the printed URL: %d %v", demo, err)
		}
		for _, want := range []string{"ONCECALL_ADDR=", "rm -rf ", "--scope dasha", "Ctrl-C", "provider simulator at " + simURL, "nothing real is charged or sent"} {
			if !strings.Contains(banner, want) {
				t.Errorf("the banner does not mention %s", want)
			}
		}
	}
}

type bannerCurl struct {
	raw, method, path, body string
	headers                 []string
}

// bannerCurls parses the curl commands of the banner: -s, -i, -X, -H and -d
// with single-quoted words, and continuation lines.
func bannerCurls(banner string) []bannerCurl {
	var out []bannerCurl
	for _, block := range strings.Split(banner, "\n\n") {
		block = strings.TrimSpace(block)
		if !strings.HasPrefix(block, "curl ") {
			continue
		}
		c := bannerCurl{raw: block, method: http.MethodGet}
		words := shellWords(strings.ReplaceAll(block, "\\\n", " "))
		for i := 1; i < len(words); i++ {
			switch w := words[i]; {
			case w == "-X":
				i++
				c.method = words[i]
			case w == "-H":
				i++
				c.headers = append(c.headers, words[i])
			case w == "-d":
				i++
				c.body = words[i]
			case strings.HasPrefix(w, "http://"):
				c.path = "/" + strings.SplitN(strings.TrimPrefix(w, "http://"), "/", 2)[1]
			}
		}
		out = append(out, c)
	}
	return out
}

func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	quoted, started := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, started = !quoted, true
		case !quoted && (r == ' ' || r == '\n'):
			if started {
				words = append(words, w.String())
			}
			w.Reset()
			started = false
		default:
			w.WriteRune(r)
			started = true
		}
	}
	if started {
		words = append(words, w.String())
	}
	return words
}

func run(t *testing.T, e *apptest.Env, c bannerCurl) apptest.Response {
	t.Helper()
	var headers []string
	for _, h := range c.headers {
		name, value, _ := strings.Cut(h, ":")
		headers = append(headers, strings.TrimSpace(name), strings.TrimSpace(value))
	}
	var body any
	if c.body != "" {
		body = c.body
	}
	return e.Request(c.method, c.path, "", body, headers...)
}
