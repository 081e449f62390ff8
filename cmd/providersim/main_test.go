package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/buildtest"
)

// TestMain removes the simulator the tests share (buildtest) when they end.
func TestMain(m *testing.M) { os.Exit(buildtest.Main(m, (*testing.M).Run)) }

func post(t *testing.T, base, key, ref, fault string) (int, []byte, error) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"external_ref": ref, "operation": "appointment.book", "payload": map[string]any{"slot_id": ref},
	})
	req, err := http.NewRequest(http.MethodPost, base+"/calendar/writes", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	if fault != "" {
		req.Header.Set("X-Sim-Fault", fault)
	}
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// The ledger is durable: a write acknowledged (or committed and dropped)
// before a SIGKILL is there after a restart, and its key still replays.
func TestLedgerSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	bin := buildtest.Command(t, "cmd/providersim")
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")

	p := simtest.StartProcess(t, bin, "--ledger", ledger)
	status, body, err := post(t, p.URL, "k-1", "act-1:book", "")
	if err != nil || status != http.StatusCreated {
		t.Fatalf("write: %d %s %v", status, body, err)
	}
	var first providersim.Write
	if err := json.Unmarshal(body, &first); err != nil {
		t.Fatal(err)
	}
	if _, _, err := post(t, p.URL, "k-2", "act-2:book", "drop_response"); err == nil {
		t.Fatal("drop_response answered")
	}
	p.Kill()

	p = simtest.StartProcess(t, bin, "--ledger", ledger)
	l, err := p.Admin.Ledger(context.Background(), "calendar")
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 2 || l[0].ID != first.ID || l[0].ExternalRef != "act-1:book" || l[1].ExternalRef != "act-2:book" {
		t.Fatalf("ledger after restart = %+v, want both writes", l)
	}
	status, body, err = post(t, p.URL, "k-1", "act-1:book", "")
	if err != nil || status != http.StatusOK {
		t.Fatalf("resend after restart: %d %s %v", status, body, err)
	}
	var again providersim.Write
	if err := json.Unmarshal(body, &again); err != nil || again.ID != first.ID {
		t.Fatalf("resend after restart got %s, want the write %s", body, first.ID)
	}
	if l, _ := p.Admin.Ledger(context.Background(), "calendar"); len(l) != 2 || l[0].Requests != 2 {
		t.Fatalf("ledger = %+v, want 2 writes, the first hit twice", l)
	}
}

func TestRefusesUnknownArguments(t *testing.T) {
	t.Parallel()
	bin := buildtest.Command(t, "cmd/providersim")
	out, err := exec.Command(bin, "--addr", "127.0.0.1:0", "extra").CombinedOutput()
	if err == nil {
		t.Fatalf("providersim accepted an extra argument:\n%s", out)
	}
	if !bytes.Contains(out, []byte(`unexpected argument "extra"`)) {
		t.Fatalf("output:\n%s", out)
	}
}

// TestDocsNameEverySettingAndRuleMember: docs/providers.md names every
// environment variable the simulator reads (how `make sim` takes another
// address) and every member of a fault rule a client sends; the protocol
// page names every kind of request a rule may apply to.
func TestDocsNameEverySettingAndRuleMember(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	providers, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	protocol, err := os.ReadFile("../../docs/provider-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	vars := regexp.MustCompile(`"(PROVIDERSIM_[A-Z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(vars) < 3 {
		t.Fatalf("found %d PROVIDERSIM_ variables in main.go: the extraction is broken", len(vars))
	}
	for _, v := range vars {
		if !strings.Contains(string(providers), v[1]) {
			t.Errorf("docs/providers.md does not name %s", v[1])
		}
	}
	rule := reflect.TypeFor[providersim.Rule]()
	for i := range rule.NumField() {
		name, _, _ := strings.Cut(rule.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "id" || name == "applied" { // answered, not sent
			continue
		}
		if !strings.Contains(string(providers), `"`+name+`"`) {
			t.Errorf(`docs/providers.md's fault rule does not name its member "%s"`, name)
		}
	}
	for _, on := range []string{providersim.OnWrite, providersim.OnLookup, providersim.OnAny, providersim.OnCapture} {
		if !strings.Contains(string(protocol), `"`+on+`"`) {
			t.Errorf(`docs/provider-protocol.md does not name "on": "%s"`, on)
		}
	}
}
