package dashatool_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

const toolsDir = "../../tools"

// TestToolFilesAreTheExport keeps tools/ equal to
// `oncecall tools export --base-url https://oncecall.example.com`.
func TestToolFilesAreTheExport(t *testing.T) {
	t.Parallel()
	defs, err := dashatool.Definitions(app.Operations(), "https://oncecall.example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, d := range defs {
		b, err := dashatool.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		want[d.Name+".json"] = b
	}
	files, err := filepath.Glob(filepath.Join(toolsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	const fix = "; run `make tools` to regenerate tools/ from the operation registry"
	for _, f := range files {
		name := filepath.Base(f)
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("tools/%s is not a tool any more%s", name, fix)
		case !bytes.Equal(got, w):
			t.Errorf("tools/%s differs from the export%s", name, fix)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("tools/%s is missing%s", name, fix)
	}
}

func TestDefinitionsFollowDashaRules(t *testing.T) {
	t.Parallel()
	defs, err := dashatool.Definitions(app.Operations(), "https://x.example/", "oc_key")
	if err != nil {
		t.Fatal(err)
	}
	namePattern := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	seen := map[string]bool{}
	for _, d := range defs {
		seen[d.Name] = true
		if !namePattern.MatchString(d.Name) {
			t.Errorf("%s: name does not match Dasha's pattern", d.Name)
		}
		if d.Webhook.URL != "https://x.example/v1/dasha/tools/"+d.Name || d.Webhook.Headers["Authorization"] != "Bearer oc_key" {
			t.Errorf("%s: webhook %+v", d.Name, d.Webhook)
		}
		if d.TimeoutSeconds < 1 || d.TimeoutSeconds > 300 || d.RetryCount < 0 || d.RetryCount > 5 {
			t.Errorf("%s: timeoutSeconds %d retryCount %d outside Dasha's limits", d.Name, d.TimeoutSeconds, d.RetryCount)
		}
		// Dasha's webhook limit is "under 10 seconds"; the answer budget
		// leaves a margin for the network below the tool's timeout.
		if d.TimeoutSeconds > 10 || dashatool.AnswerBudget > time.Duration(d.TimeoutSeconds)*time.Second-time.Second {
			t.Errorf("%s: timeoutSeconds %d and answer budget %v do not fit Dasha's 10s limit", d.Name, d.TimeoutSeconds, dashatool.AnswerBudget)
		}
		checkPending(t, d.Name+" fallBackResult", d.FallBackResult)
		props, _ := d.Schema["properties"].(map[string]any)
		if d.Schema["type"] != "object" || props == nil {
			t.Errorf("%s: schema is not an object schema: %v", d.Name, d.Schema)
		}
		if dashatool.ReadOnly(d.Name) && d.Name != dashatool.CheckActionStatus {
			if _, ok := props["action_id"]; ok {
				t.Errorf("%s: a read-only tool takes no action_id", d.Name)
			}
			continue // read-only, no action
		}
		if _, ok := props["action_id"]; !ok {
			t.Errorf("%s: schema has no action_id", d.Name)
		}
		if d.Name != dashatool.CheckActionStatus && !strings.Contains(d.Description, "pass the action_id from the earlier answer") {
			t.Errorf("%s: description does not ask for the action_id on a retry or re-plan", d.Name)
		}
	}
	for _, name := range []string{
		"book_appointment", "reschedule_appointment", "cancel_appointment", "charge_payment", "send_message", "create_customer",
		"update_customer", "add_customer_note", "add_loyalty_points", "check_action_status", "find_available_slots",
		"find_customer", "get_customer", "list_appointments",
	} {
		if !seen[name] {
			t.Errorf("no tool %s", name)
		}
	}
	if _, err := dashatool.Definitions(app.Operations(), "ftp://x", ""); err == nil {
		t.Error("a non-http base URL was accepted")
	}
}
