package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
			u := url(m)
			if platform == "elevenlabs" && strings.Contains(u, "/async/") {
				u = strings.Replace(u, "/async/", "/", 1) // a write, run in the background
			}
			if !strings.HasPrefix(u, want[platform]) {
				t.Errorf("%s: url %s", platform, u)
			}
		}
		if !bytes.Contains(out.Bytes(), []byte("KEY")) {
			t.Errorf("%s: the key placeholder is missing", platform)
		}
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"tools", "export", "--platform", "bland", "--base-url", "https://calls.example.org"}, &out, &errs); err == nil {
		t.Error("an unknown platform: no error")
	}
}

// Every exported tool carries its platform's fields for the time it runs:
// something said at once and when the answer is slow, what is said when it
// fails, and none of it claims that anything happened.
func TestToolsExportSayWhileTheToolRuns(t *testing.T) {
	t.Parallel()
	export := func(platform string) []map[string]any {
		t.Helper()
		var out, errs bytes.Buffer
		if err := run(context.Background(), []string{"tools", "export", "--platform", platform,
			"--base-url", "https://calls.example.org"}, &out, &errs); err != nil {
			t.Fatalf("%s: %v (%s)", platform, err, errs.String())
		}
		var printed []map[string]any
		if err := json.Unmarshal(out.Bytes(), &printed); err != nil || len(printed) == 0 {
			t.Fatalf("%s: %v", platform, err)
		}
		return printed
	}
	noClaim := func(where, text string) {
		t.Helper()
		lower := strings.ToLower(text)
		if strings.TrimSpace(text) == "" {
			t.Errorf("%s: nothing to say", where)
		}
		for _, claim := range []string{"booked", "is confirmed", "done.", "went through", "successfully", "all set", "sent"} {
			if strings.Contains(lower, claim) {
				t.Errorf("%s claims success (%q): %s", where, claim, text)
			}
		}
	}
	for _, tool := range export("vapi") {
		name := tool["function"].(map[string]any)["name"].(string)
		said := map[string]map[string]any{}
		for _, m := range tool["messages"].([]any) {
			m := m.(map[string]any)
			said[m["type"].(string)] = m
			noClaim("vapi "+name+" "+m["type"].(string), m["content"].(string))
		}
		for _, kind := range []string{"request-start", "request-response-delayed", "request-failed"} {
			if said[kind] == nil {
				t.Errorf("vapi %s: no %s message", name, kind)
			}
		}
		// The delayed message comes while oncecall may still answer in time.
		if ms, _ := said["request-response-delayed"]["timingMilliseconds"].(float64); ms <= 0 ||
			time.Duration(ms)*time.Millisecond >= dashatool.AnswerBudget {
			t.Errorf("vapi %s: request-response-delayed after %vms, want within the %v budget", name, ms, dashatool.AnswerBudget)
		}
	}
	for _, tool := range export("retell") {
		name := tool["name"].(string)
		if tool["speak_during_execution"] != true || tool["execution_message_type"] != "static_text" || tool["speak_after_execution"] != true {
			t.Errorf("retell %s: speak_during_execution %v, execution_message_type %v, speak_after_execution %v",
				name, tool["speak_during_execution"], tool["execution_message_type"], tool["speak_after_execution"])
		}
		text, _ := tool["execution_message_description"].(string)
		noClaim("retell "+name+" execution message", text)
	}
	// A write runs in the background on the async route, whose answer is
	// its late result; a read answers within the budget.
	for _, tool := range export("elevenlabs") {
		c := tool["tool_config"].(map[string]any)
		name, _ := c["name"].(string)
		url, _ := c["api_schema"].(map[string]any)["url"].(string)
		mode, timeout, route := "async", float64(dashatool.ElevenLabsAsyncTimeoutSeconds), "/v1/elevenlabs/async/tools/"+name
		if dashatool.ReadOnly(name) {
			mode, timeout, route = "immediate", float64(dashatool.ElevenLabsTimeoutSeconds), "/v1/elevenlabs/tools/"+name
		}
		if c["pre_tool_speech"] != "force" || c["execution_mode"] != mode || c["tool_error_handling_mode"] != "passthrough" ||
			c["response_timeout_secs"] != timeout || !strings.HasSuffix(url, route) {
			t.Errorf("elevenlabs %s: pre_tool_speech %v, execution_mode %v (want %s), tool_error_handling_mode %v, response_timeout_secs %v (want %v), url %s",
				name, c["pre_tool_speech"], c["execution_mode"], mode, c["tool_error_handling_mode"], c["response_timeout_secs"], timeout, url)
		}
	}
}
