package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// tools export --platform prints one definition per tool in each
// platform's shape, pointing at that platform's oncecall route.
func TestToolsExportPerPlatform(t *testing.T) {
	t.Parallel()
	defs, err := dashatool.Definitions(app.Operations(), "https://calls.example.org", "KEY")
	if err != nil {
		t.Fatal(err)
	}
	urlOf := map[string]func(m map[string]any) string{
		"vapi":   func(m map[string]any) string { return m["server"].(map[string]any)["url"].(string) },
		"retell": func(m map[string]any) string { return m["url"].(string) },
		"elevenlabs": func(m map[string]any) string {
			return m["tool_config"].(map[string]any)["api_schema"].(map[string]any)["url"].(string)
		},
	}
	want := map[string]string{
		"vapi":       "https://calls.example.org/v1/vapi/webhook",
		"retell":     "https://calls.example.org/v1/retell/functions/",
		"elevenlabs": "https://calls.example.org/v1/elevenlabs/tools/",
	}
	for platform, url := range urlOf {
		var out, errs bytes.Buffer
		err := run(context.Background(), []string{"tools", "export", "--platform", platform,
			"--base-url", "https://calls.example.org/", "--api-key-placeholder", "KEY"}, &out, &errs)
		if err != nil {
			t.Fatalf("%s: %v (%s)", platform, err, errs.String())
		}
		var printed []map[string]any
		if err := json.Unmarshal(out.Bytes(), &printed); err != nil || len(printed) != len(defs) {
			t.Fatalf("%s: printed %d definitions for %d tools: %v", platform, len(printed), len(defs), err)
		}
		for _, m := range printed {
			if u := url(m); !strings.HasPrefix(u, want[platform]) {
				t.Errorf("%s: url %s", platform, u)
			}
		}
		if !bytes.Contains(out.Bytes(), []byte("KEY")) {
			t.Errorf("%s: the key placeholder is missing", platform)
		}
	}
	lower := strings.ToLower(dashatool.FailureMessage)
	for _, claim := range []string{"booked", "is confirmed", "done.", "went through", "successfully"} {
		if strings.Contains(lower, claim) {
			t.Errorf("the failure message claims success (%q): %s", claim, dashatool.FailureMessage)
		}
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"tools", "export", "--platform", "bland", "--base-url", "https://calls.example.org"}, &out, &errs); err == nil {
		t.Error("an unknown platform: no error")
	}
}
