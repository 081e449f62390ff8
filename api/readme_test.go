package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// The fewest curl examples each page must yield: a broken extraction finds
// fewer. A docs page not named here runs too when it has examples.
var leastExamples = map[string]int{
	"README.md":     5,
	"docs/api.md":   11,
	"docs/dasha.md": 2,
}

// TestReadmeCurlExamplesWork runs README's tour as printed, with sh and
// curl, after the export lines of the `make run` banner (see runTour), and
// for each docs page that has curl examples calling $URL, the tour and then
// the page's examples, in order, on a server of its own (and so through the
// openapi.yaml checks). Each example must answer 2xx without a rejected or
// pending outcome; an example that repeats an earlier write must replay its
// answer; every resource a write names must exist in the database.
// Placeholders such as <slot id> take the ids that earlier examples created.
func TestReadmeCurlExamplesWork(t *testing.T) {
	t.Parallel()
	pages := []string{"README.md"}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range docs {
		if page := "docs/" + filepath.Base(path); len(curlCommands(readPage(t, page))) > 0 {
			pages = append(pages, page)
		}
	}
	for page := range leastExamples {
		if !slices.Contains(pages, page) {
			t.Errorf("%s has no curl examples calling $URL", page)
		}
	}
	tour := readmeTour(readPage(t, "README.md"))
	if n := strings.Count(tour, "curl "); n < leastExamples["README.md"] {
		t.Fatalf("found %d curl commands in README's tour, want at least %d: the extraction is broken", n, leastExamples["README.md"])
	}
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			run := startExamples(t)
			run.tour(tour)
			if page == "README.md" {
				return
			}
			commands := curlCommands(readPage(t, page))
			if len(commands) < max(leastExamples[page], 1) {
				t.Fatalf("found %d curl examples in %s, want at least %d: the extraction is broken",
					len(commands), page, leastExamples[page])
			}
			run.all(page, commands)
			t.Logf("ran the %d curl examples of %s", len(commands), page)
		})
	}
}

// TestReadmeIsShortAndLinksResolve keeps README.md a five-minute read and
// every relative link of README.md and docs/*.md (and its #anchor) pointing
// at something that exists.
func TestReadmeIsShortAndLinksResolve(t *testing.T) {
	t.Parallel()
	readme := readPage(t, "README.md")
	if n := strings.Count(readme, "\n"); n >= 250 {
		t.Errorf("README.md has %d lines; keep it under 250 and move detail into docs/", n)
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, path := range docs {
		pages = append(pages, "docs/"+filepath.Base(path))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		for _, m := range link.FindAllStringSubmatch(prose(readPage(t, page)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if file == "" {
				file = filepath.Base(page)
			}
			path := filepath.Join("..", filepath.Dir(page), file)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") {
				text, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(anchors(string(text)), anchor) {
					t.Errorf("%s links to %s, but %s has no heading #%s", page, target, file, anchor)
				}
			}
		}
	}
}

func readPage(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", page))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// examples runs documented curl commands against one server, carrying the
// ids they create from one command (and one page) to the next.
type examples struct {
	t       *testing.T
	e       *apptest.Env
	tenant  string
	key     string
	exports string // the banner's export lines
	ids     map[string]string
	seen    map[string]apptest.Response
}

// What a 2xx answer of a write to these paths names, for later examples,
// and the table that must then hold it.
var creates = map[string]struct {
	resource, action, table string
}{
	"/v1/slots":           {"<slot id>", "", "slots"},
	"/v1/appointments":    {"<appointment id>", "<action id>", "appointments"},
	"/v1/payment-intents": {"<payment intent id>", "", "payment_intents"},
	"/v1/locations":       {"<location id>", "", "locations"},
	"/v1/services":        {"<service id>", "", "services"},
	"/v1/practitioners":   {"<practitioner id>", "", "practitioners"},
}

// startExamples starts a server as `make run` does (the demo data, the
// provider simulator for payments and messages) and keeps the export lines
// of its banner.
func startExamples(t *testing.T) *examples {
	e := apptest.Start(t, func(c *app.Config) { c.Simulate = app.DemoSimulated })
	var banner bytes.Buffer
	if err := e.Main.SeedDemo(t.Context(), &banner, "bin/oncecall"); err != nil {
		t.Fatal(err)
	}
	exports := regexp.MustCompile(`(?m)^export ([A-Z_]+)=(.*)$`).FindAllStringSubmatch(banner.String(), -1)
	vars := map[string]string{}
	var lines []string
	for _, m := range exports {
		vars[m[1]] = m[2]
		lines = append(lines, m[0])
	}
	for _, name := range []string{"URL", "KEY", "CUSTOMER_ID"} {
		if vars[name] == "" {
			t.Fatalf("the banner exports no %s:\n%s", name, banner.String())
		}
	}
	if vars["URL"] != e.URL {
		t.Fatalf("the banner exports URL=%s; the server is at %s", vars["URL"], e.URL)
	}
	tenant, err := e.Store.TenantByAPIKey(t.Context(), vars["KEY"])
	if err != nil {
		t.Fatalf("the banner's KEY: %v", err)
	}
	return &examples{
		t: t, e: e, tenant: tenant.ID.String(), key: vars["KEY"], exports: strings.Join(lines, "\n"),
		ids:  map[string]string{"<customer id>": vars["CUSTOMER_ID"], "<new slot id>": e.Slot(tenant.ID, 48).String()},
		seen: map[string]apptest.Response{},
	}
}

// readmeTour returns the shell block of README's "A tour of the API".
func readmeTour(readme string) string {
	_, section, _ := strings.Cut(readme, "## A tour of the API")
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	return block
}

// tour runs README's tour as a person would: the banner's export lines,
// then the block as printed, in sh with only PATH and HOME from this
// environment, stopping at the first failing command or unset variable.
// The variables the tour sets are printed after it; their ids are then
// checked in the database and given to the examples of the docs pages.
func (x *examples) tour(block string) {
	t := x.t
	for _, tool := range []string{"sh", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI runs README's tour, which needs %s: it is not on PATH", tool)
			}
			t.Skipf("README's tour needs %s, which is not on PATH; CI fails without it", tool)
		}
	}
	names := regexp.MustCompile(`(?m)^(?:echo .*; )?([A-Z_]+)=`).FindAllStringSubmatch(block, -1)
	var trailer strings.Builder
	for _, m := range names {
		fmt.Fprintf(&trailer, "echo \"@@%[1]s=$%[1]s\"\n", m[1])
	}
	script := x.exports + "\n" + block + trailer.String()
	cmd := exec.CommandContext(t.Context(), "sh", "-eu", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README's tour failed: %v\n%s", err, out)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^@@([A-Z_]+)=(.*)$`).FindAllStringSubmatch(string(out), -1) {
		vars[m[1]] = m[2]
	}
	text := string(out)
	if regexp.MustCompile(`HTTP/[0-9.]+ [45]|"status":\s*[45][0-9][0-9]`).MatchString(text) {
		t.Fatalf("README's tour got an error answer:\n%s", out)
	}
	if !strings.Contains(text, "Idempotent-Replayed: true") && !strings.Contains(text, "idempotent-replayed: true") {
		t.Fatalf("README's retry was not replayed:\n%s", out)
	}
	slot, action := vars["SLOT_ID"], vars["ACTION_ID"]
	if n := x.e.Count("SELECT count(*) FROM slots WHERE id::text = $1 AND tenant_id = $2", slot, x.tenant); n != 1 {
		t.Fatalf("README's tour: SLOT_ID=%q is %d slots of the demo tenant\n%s", slot, n, out)
	}
	var appointment string
	n := x.e.Count(`SELECT count(*) FROM appointments p JOIN actions a ON a.resource_id = p.id::text
		WHERE a.id::text = $1 AND a.idempotency_key = 'book-42-731' AND a.outcome = 'confirmed'
		  AND p.slot_id::text = $2 AND p.customer_id::text = $3 AND p.status = 'active'`, action, slot, x.ids["<customer id>"])
	if n != 1 {
		t.Fatalf("README's tour: ACTION_ID=%q booked %d appointments of SLOT_ID for CUSTOMER_ID\n%s", action, n, out)
	}
	if n := x.e.Count("SELECT count(*) FROM appointments WHERE slot_id::text = $1", slot); n != 1 {
		t.Fatalf("README's tour: %d appointments of its slot, want 1", n)
	}
	if err := x.e.Store.Pool().QueryRow(t.Context(), "SELECT resource_id FROM actions WHERE id::text = $1", action).Scan(&appointment); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, `"action_id":"`+action+`","operation":"appointment.book","outcome":"confirmed"`) {
		t.Fatalf("README's tour: GET /v1/actions/%s did not answer the confirmed booking:\n%s", action, out)
	}
	x.ids["<slot id>"], x.ids["<action id>"], x.ids["<appointment id>"] = slot, action, appointment
	t.Logf("ran README's tour: %d curl commands", strings.Count(block, "curl "))
}

var placeholder = regexp.MustCompile(`<[a-z ]+>`)

// all runs the commands of one page in order.
func (x *examples) all(page string, commands []string) {
	t := x.t
	for _, cmd := range commands {
		filled := placeholder.ReplaceAllStringFunc(cmd, func(p string) string {
			v, ok := x.ids[p]
			if !ok {
				t.Fatalf("%s: no value for %s in:\n%s", page, p, cmd)
			}
			return v
		})
		req, err := parseCurl(filled)
		if err != nil {
			t.Fatalf("%s: %v in:\n%s", page, err, cmd)
		}
		fill := strings.NewReplacer("$URL", "", "$KEY", x.key).Replace
		var headers []string
		for _, h := range req.headers {
			name, value, _ := strings.Cut(h, ":")
			headers = append(headers, strings.TrimSpace(name), fill(strings.TrimSpace(value)))
		}
		var body any
		if req.body != "" {
			body = fill(req.body)
		}
		r := x.e.Request(req.method, fill(req.url), "", body, headers...)
		if r.Status >= 300 {
			t.Fatalf("%s example answered %d %s:\n%s", page, r.Status, r.Body, cmd)
		}
		var env struct {
			ActionID string `json:"action_id"`
			Outcome  string `json:"outcome"`
			Result   struct {
				ID string `json:"id"`
			} `json:"result"`
		}
		_ = json.Unmarshal(r.Body, &env) // lists are not envelopes; their fields stay empty
		if env.Outcome != "" && env.Outcome != "confirmed" {
			t.Fatalf("%s example answered outcome %q: %s\n%s", page, env.Outcome, r.Body, cmd)
		}
		if prev, ok := x.seen[filled]; ok && req.method != "GET" {
			if !r.Replayed() || r.Status != prev.Status || !bytes.Equal(r.Body, prev.Body) {
				t.Fatalf("%s example repeats a write but was not replayed (%d, replayed %v):\n%s",
					page, r.Status, r.Replayed(), cmd)
			}
		}
		x.seen[filled] = r
		if c, ok := creates[fill(req.url)]; ok && req.method == "POST" {
			if env.Result.ID == "" {
				t.Fatalf("%s example named no resource: %s\n%s", page, r.Body, cmd)
			}
			if n := x.e.Count("SELECT count(*) FROM "+c.table+" WHERE id = $1 AND tenant_id = $2", env.Result.ID, x.tenant); n != 1 {
				t.Fatalf("%s example: %d rows in %s for %s", page, n, c.table, env.Result.ID)
			}
			x.ids[c.resource] = env.Result.ID
			if c.action != "" {
				x.ids[c.action] = env.ActionID
			}
		}
	}
}

// prose drops fenced code blocks and inline code spans, where brackets are
// not Markdown.
func prose(md string) string {
	var out []string
	for _, line := range unfenced(md) {
		out = append(out, codeSpan.ReplaceAllString(line, "``"))
	}
	return strings.Join(out, "\n")
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// unfenced returns the lines of md outside fenced code blocks.
func unfenced(md string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		} else if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// anchors returns the ids GitHub gives a page's headings: lower case,
// punctuation dropped, spaces as hyphens, a repeated id suffixed -1, -2, ...
func anchors(md string) []string {
	var out []string
	count := map[string]int{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, line := range unfenced(md) {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		id := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), ""), " ", "-")
		if n := count[id]; n > 0 {
			out = append(out, id+"-"+strconv.Itoa(n))
		} else {
			out = append(out, id)
		}
		count[id]++
	}
	return out
}

type curlRequest struct {
	method, url, body string
	headers           []string
}

// curlCommands returns the curl commands that call $URL in a page's shell
// blocks, each with its continuation lines.
func curlCommands(page string) []string {
	var out []string
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "curl ") || !strings.Contains(line, "$URL") {
			continue
		}
		cmd := line
		for (strings.Count(cmd, "'")%2 == 1 || strings.HasSuffix(cmd, `\`)) && i+1 < len(lines) {
			i++
			cmd += "\n" + strings.TrimSpace(lines[i])
		}
		out = append(out, cmd)
	}
	return out
}

// parseCurl reads the few curl options the docs use: -s, -i, -X, -H and
// -d, with single- or double-quoted words and trailing comments.
func parseCurl(cmd string) (curlRequest, error) {
	words := shellWords(cmd)
	r := curlRequest{method: "GET"}
	for i := 1; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-s" || w == "-i":
		case (w == "-X" || w == "-H" || w == "-d") && i+1 < len(words):
			i++
			switch w {
			case "-X":
				r.method = words[i]
			case "-H":
				r.headers = append(r.headers, words[i])
			case "-d":
				r.body = words[i]
				if r.method == "GET" {
					r.method = "POST"
				}
			}
		case strings.HasPrefix(w, "$URL"):
			r.url = w
		default:
			return r, &parseError{w}
		}
	}
	if r.url == "" {
		return r, &parseError{"(no $URL)"}
	}
	return r, nil
}

type parseError struct{ word string }

func (e *parseError) Error() string { return "unexpected word " + e.word }

// shellWords splits a command like sh: quotes group, a backslash-newline is
// a space, and # starts a comment.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, started := byte(0), false
	flush := func() {
		if started {
			words = append(words, w.String())
		}
		w.Reset()
		started = false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case in != 0 && ch == in:
			in = 0
		case in != 0:
			w.WriteByte(ch)
		case ch == '\'' || ch == '"':
			in, started = ch, true
		case ch == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
			flush()
		case ch == ' ' || ch == '\n' || ch == '\t':
			flush()
		case ch == '#' && !started:
			for i < len(s) && s[i] != '\n' {
				i++
			}
		default:
			w.WriteByte(ch)
			started = true
		}
	}
	flush()
	return words
}
