package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/apptest"
)

// The fewest curl examples each page must yield: a broken extraction finds
// fewer. A docs page not named here runs too when it has examples.
var leastExamples = map[string]int{
	"README.md":     5,
	"docs/api.md":   12,
	"docs/dasha.md": 2,
}

// TestReadmeCurlExamplesWork runs the curl examples that call $URL, in
// order, against a live server (and so through the openapi.yaml checks):
// README.md's, and for each docs page that has some, README's and then the
// page's on a server of its own. Each must answer 2xx without a rejected or
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
	readme := curlCommands(readPage(t, "README.md"))
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			commands := curlCommands(readPage(t, page))
			if len(commands) < max(leastExamples[page], 1) {
				t.Fatalf("found %d curl examples in %s, want at least %d: the extraction is broken",
					len(commands), page, leastExamples[page])
			}
			run := startExamples(t)
			if page != "README.md" {
				run.all("README.md", readme)
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
	t      *testing.T
	e      *apptest.Env
	tenant string
	key    string
	ids    map[string]string
	seen   map[string]apptest.Response
}

// What a 2xx answer of a write to these paths names, for later examples,
// and the table that must then hold it.
var creates = map[string]struct {
	resource, action, table string
}{
	"/v1/slots":           {"<slot id>", "", "slots"},
	"/v1/appointments":    {"<appointment id>", "<action id>", "appointments"},
	"/v1/payment-intents": {"<payment intent id>", "", "payment_intents"},
	"/v1/messages":        {"<message id>", "", "messages"},
}

func startExamples(t *testing.T) *examples {
	e := apptest.Start(t)
	tenant, key := e.Tenant("acme")
	c, err := e.Store.CreateCustomer(context.Background(), db.NewCustomer{TenantID: tenant.ID, Name: "Ana", Phone: "+447700900123"})
	if err != nil {
		t.Fatal(err)
	}
	return &examples{
		t: t, e: e, tenant: tenant.ID.String(), key: key,
		ids:  map[string]string{"<customer id>": c.ID.String(), "<new slot id>": e.Slot(tenant.ID, 48).String()},
		seen: map[string]apptest.Response{},
	}
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
