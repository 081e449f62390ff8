package api_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/apptest"
)

// TestReadmeCurlExamplesWork runs every curl example of README.md that calls
// $URL, in order, against a live server (and so through the openapi.yaml
// checks): each must answer 2xx. Placeholders such as <slot id> take the
// ids that earlier examples created.
func TestReadmeCurlExamplesWork(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	commands := curlCommands(string(readme))
	if len(commands) < 15 {
		t.Fatalf("found %d curl examples in README.md: the extraction is broken", len(commands))
	}

	e := apptest.Start(t)
	tenant, key := e.Tenant("acme")
	c, err := e.Store.CreateCustomer(context.Background(), db.NewCustomer{TenantID: tenant.ID, Name: "Ana", Phone: "+447700900123"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{"<customer id>": c.ID.String(), "<new slot id>": e.Slot(tenant.ID, 48).String()}
	// What a 2xx answer of a write to these paths names, for later examples.
	creates := map[string][]string{
		"/v1/slots":           {"<slot id>"},
		"/v1/appointments":    {"<appointment id>", "<action id>"},
		"/v1/payment-intents": {"<payment intent id>"},
		"/v1/messages":        {"<message id>"},
	}
	placeholder := regexp.MustCompile(`<[a-z ]+>`)
	for _, cmd := range commands {
		filled := placeholder.ReplaceAllStringFunc(cmd, func(p string) string {
			v, ok := ids[p]
			if !ok {
				t.Fatalf("no value for %s in:\n%s", p, cmd)
			}
			return v
		})
		req, err := parseCurl(filled)
		if err != nil {
			t.Fatalf("%v in:\n%s", err, cmd)
		}
		fill := strings.NewReplacer("$URL", "", "$KEY", key).Replace
		var headers []string
		for _, h := range req.headers {
			name, value, _ := strings.Cut(h, ":")
			headers = append(headers, strings.TrimSpace(name), fill(strings.TrimSpace(value)))
		}
		var body any
		if req.body != "" {
			body = fill(req.body)
		}
		r := e.Request(req.method, fill(req.url), "", body, headers...)
		if r.Status >= 300 {
			t.Fatalf("README example answered %d %s:\n%s", r.Status, r.Body, cmd)
		}
		if names := creates[fill(req.url)]; req.method == "POST" && names != nil {
			var env struct {
				ActionID string `json:"action_id"`
				Result   struct {
					ID string `json:"id"`
				} `json:"result"`
			}
			if err := json.Unmarshal(r.Body, &env); err != nil {
				t.Fatal(err)
			}
			ids[names[0]] = env.Result.ID
			if len(names) > 1 {
				ids[names[1]] = env.ActionID
			}
		}
	}
	t.Logf("ran the %d curl examples of README.md", len(commands))
}

type curlRequest struct {
	method, url, body string
	headers           []string
}

// curlCommands returns the curl commands that call $URL in the README's
// shell blocks, each with its continuation lines.
func curlCommands(readme string) []string {
	var out []string
	lines := strings.Split(readme, "\n")
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

// parseCurl reads the few curl options the README uses: -s, -i, -X, -H
// and -d, with single- or double-quoted words and trailing comments.
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
