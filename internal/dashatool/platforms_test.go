package dashatool_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// The platforms' schemas keep every argument, which are required and their
// allowed values; a bound a platform cannot carry that the model must know
// (a small one, such as a list's 1 to 20) is in the description.
func TestPlatformSchemasKeepWhatMatters(t *testing.T) {
	t.Parallel()
	defs, err := dashatool.Definitions(app.Operations(), "https://x.example", "")
	if err != nil {
		t.Fatal(err)
	}
	schemaOf := map[string]func(tool any) map[string]any{
		"vapi": func(tool any) map[string]any {
			return tool.(map[string]any)["function"].(map[string]any)["parameters"].(map[string]any)
		},
		"retell": func(tool any) map[string]any { return tool.(map[string]any)["parameters"].(map[string]any) },
		"elevenlabs": func(tool any) map[string]any {
			c := tool.(map[string]any)["tool_config"].(map[string]any)
			return c["api_schema"].(map[string]any)["request_body_schema"].(map[string]any)
		},
	}
	for platform, schema := range schemaOf {
		tools, err := dashatool.PlatformDefinitions(platform, defs, "https://x.example", "")
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range defs {
			s := schema(tools[i])
			if fmt.Sprint(s["required"]) != fmt.Sprint(d.Schema["required"]) {
				t.Errorf("%s %s: required %v, want %v", platform, d.Name, s["required"], d.Schema["required"])
			}
			props := s["properties"].(map[string]any)
			for name, p := range d.Schema["properties"].(map[string]any) {
				p := p.(map[string]any)
				got, ok := props[name].(map[string]any)
				if !ok {
					t.Errorf("%s %s: no property %s", platform, d.Name, name)
					continue
				}
				if got["description"] != p["description"] || fmt.Sprint(got["enum"]) != fmt.Sprint(p["enum"]) {
					t.Errorf("%s %s.%s: description %q enum %v, want %q %v", platform, d.Name, name, got["description"], got["enum"], p["description"], p["enum"])
				}
				lo, hasLo := p["minimum"].(int64)
				hi, hasHi := p["maximum"].(int64)
				if !hasLo || !hasHi || got["minimum"] != nil || hi-lo > 1000 {
					continue
				}
				if desc, _ := p["description"].(string); !containsAll(desc, fmt.Sprint(lo), fmt.Sprint(hi)) {
					t.Errorf("%s %s.%s: the bounds %d to %d are not in the description %q", platform, d.Name, name, lo, hi, desc)
				}
			}
			want := len(d.Schema["properties"].(map[string]any))
			if platform == "elevenlabs" {
				want += 2 // system__conversation_id and system__caller_id
			}
			if len(props) != want {
				t.Errorf("%s %s: %d properties, want %d", platform, d.Name, len(props), want)
			}
		}
	}
}

func containsAll(s string, subs ...string) bool {
	return !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(s, sub) })
}
