package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// tsDir holds the TypeScript client: openapi-typescript types generated
// from openapi.yaml (schema.d.ts, committed) and the book.ts script that
// calls a live server with openapi-fetch.
const tsDir = "../clients/ts"

// TestTypeScriptClient checks that the committed schema.d.ts is what
// openapi-typescript makes of openapi.yaml, builds the package (index.ts,
// book.ts) against it, checks what npm would pack, and runs book.js against
// a live server: book, retry with the same key and see Idempotent-Replayed,
// reuse the key with another slot and get 422, book through retryingFetch
// over a connection that loses the first answer and get the stored one, and
// see that a 422 is not retried. It
// needs Node.js 20+ and npm, and installs the pinned packages (npm ci) when
// clients/ts/node_modules is absent. Without node it skips: make test needs
// only Go and PostgreSQL, and CI has node.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("node and npm are not on PATH: install Node.js 20+ to run the TypeScript client against the server")
	}
	if _, err := os.Stat(filepath.Join(tsDir, "node_modules")); errors.Is(err, fs.ErrNotExist) {
		runIn(t, tsDir, npm, "ci", "--no-audit", "--no-fund")
	}

	fresh := filepath.Join(t.TempDir(), "schema.d.ts")
	runIn(t, tsDir, node, "node_modules/openapi-typescript/bin/cli.js", "../../openapi.yaml", "-o", fresh)
	committed, err := os.ReadFile(filepath.Join(tsDir, "schema.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, generated) {
		t.Fatalf("clients/ts/schema.d.ts is stale: run make generate-ts and commit it")
	}
	runIn(t, tsDir, npm, "run", "--silent", "build")
	var packed []struct {
		Name  string `json:"name"`
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(runIn(t, tsDir, npm, "pack", "--dry-run", "--json", "--ignore-scripts")), &packed); err != nil || len(packed) != 1 {
		t.Fatalf("npm pack --dry-run --json: %v", err)
	}
	var files []string
	for _, f := range packed[0].Files {
		files = append(files, f.Path)
	}
	slices.Sort(files)
	if want := []string{"README.md", "dist/index.d.ts", "dist/index.js", "dist/schema.d.ts", "package.json"}; packed[0].Name != "@oncecall/client" || !slices.Equal(files, want) {
		t.Fatalf("npm would pack %s with %v, want @oncecall/client with %v", packed[0].Name, files, want)
	}

	e := apptest.Start(t)
	_, key := e.Tenant("acme")
	out := runIn(t, tsDir, node, "dist/book.js", e.URL, key)
	if !strings.Contains(out, "tsclient: 10 passed, 0 failed") {
		t.Fatalf("book.js did not pass every check:\n%s", out)
	}
	if n := e.Count("SELECT count(*) FROM appointments"); n != 2 {
		t.Errorf("appointments = %d, want 2", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE idempotency_key LIKE 'ts-book-%'"); n != 1 {
		t.Errorf("booking actions = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE idempotency_key LIKE 'ts-lost-%' AND outcome = 'confirmed'"); n != 1 {
		t.Errorf("bookings after a lost answer = %d, want 1", n)
	}
	t.Log(strings.TrimSpace(out))
}

// runIn runs a command in dir and returns its output, failing the test
// when it fails.
func runIn(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}
