package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// toolExamples are arguments each tool accepts (valid) and, beyond the
// variants generated from its schema, arguments it must refuse (invalid).
// Every tool needs at least one valid example.
func toolExamples(d dashaEnv) (valid, invalid map[string][]any) {
	id := func() string { return uuid.NewString() }
	book := func(extra ...any) map[string]any {
		m := map[string]any{"customer_id": d.customer.String(), "slot_id": d.slot.String()}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	valid = map[string][]any{
		"book_appointment": {
			book(),
			book("customer_id", strings.ToUpper(d.customer.String()), "service", "Haircut", "action_id", "retry-1"),
			book("service", strings.Repeat("é", 200)),
			book("action_id", id()),
			book("action_id", ""),
		},
		"reschedule_appointment": {
			map[string]any{"appointment_id": id(), "slot_id": id()},
			map[string]any{"appointment_id": id(), "slot_id": id(), "action_id": "move-1"},
		},
		"cancel_appointment": {
			map[string]any{"appointment_id": id()},
			map[string]any{"appointment_id": id(), "action_id": strings.Repeat("k", 255)},
		},
		"check_action_status": {
			map[string]any{"action_id": id()},
			map[string]any{"action_id": strings.ToUpper(id())},
		},
		"find_available_slots": {
			map[string]any{},
			map[string]any{"limit": 1},
			map[string]any{"limit": 20, "from": "2030-01-02T09:00:00+02:00"},
			map[string]any{"from": "2030-01-02t09:00:00.5z"},
			json.RawMessage(`{"limit": 2.0}`),
		},
	}
	invalid = map[string][]any{
		"book_appointment": {
			book("service", strings.Repeat("a", 201)),
			book("action_id", strings.Repeat("k", 256)),
			book("action_id", "ключ"),
			book("action_id", "line\nbreak"),
			book("customer_id", ""),
			book("customer_id", d.customer.String()+"0"),
		},
		"check_action_status": {
			map[string]any{"action_id": "retry-1"},
			map[string]any{},
		},
		"find_available_slots": {
			map[string]any{"limit": 0},
			map[string]any{"limit": 21},
			map[string]any{"limit": 2.5},
			map[string]any{"from": "tomorrow"},
			map[string]any{"from": ""},
			map[string]any{"from": "2030-01-02 09:00"},
		},
	}
	return valid, invalid
}

// variants derives invalid arguments from a valid example and the schema:
// each required property missing or null, each property of the wrong type,
// each uuid or date-time property badly formatted, an unknown property, and
// arguments that are not an object.
func variants(schema map[string]any, example map[string]any) []any {
	clone := func() map[string]any {
		m := make(map[string]any, len(example))
		for k, v := range example {
			m[k] = v
		}
		return m
	}
	props, _ := schema["properties"].(map[string]any)
	required, _ := schema["required"].([]string)
	out := []any{[]any{example}, "arguments as text"}
	for _, name := range required {
		m := clone()
		delete(m, name)
		out = append(out, m)
		m = clone()
		m[name] = nil
		out = append(out, m)
	}
	for name, p := range props {
		p := p.(map[string]any)
		wrong := map[string]any{"string": 42, "integer": "7", "boolean": "yes", "object": "x", "array": "x"}[p["type"].(string)]
		m := clone()
		m[name] = wrong
		out = append(out, m)
		m = clone()
		m[name] = true
		out = append(out, m)
		switch p["format"] {
		case "uuid":
			m = clone()
			m[name] = "not-a-uuid"
			out = append(out, m)
		case "date-time":
			m = clone()
			m[name] = "next tuesday"
			out = append(out, m)
		}
	}
	m := clone()
	m["unexpected_property"] = 1
	return append(out, m)
}

// TestToolSchemasAcceptWhatTheHandlerAccepts checks, for every tool, that
// its published JSON Schema and the webhook handler agree on every example.
func TestToolSchemasAcceptWhatTheHandlerAccepts(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	// The invalid variants include arguments that are not an object, which
	// openapi.yaml does not describe: the server answers them 200 anyway.
	d.Contract.AllowUndocumentedInput()
	defs, err := dashatool.Definitions(app.Operations(), "https://oncecall.example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	valid, invalid := toolExamples(d)
	for _, def := range defs {
		schema := compileSchema(t, def)
		if len(valid[def.Name]) == 0 {
			t.Errorf("tool %s has no argument examples: add valid ones to toolExamples", def.Name)
			continue
		}
		type example struct {
			args  any
			valid bool
		}
		var examples []example
		for _, v := range valid[def.Name] {
			examples = append(examples, example{v, true})
		}
		for _, v := range invalid[def.Name] {
			examples = append(examples, example{v, false})
		}
		base, _ := valid[def.Name][0].(map[string]any)
		for _, v := range variants(def.Schema, base) {
			examples = append(examples, example{v, false})
		}
		for _, ex := range examples {
			raw, err := json.Marshal(ex.args)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			schemaErr := schema.Validate(inst)
			if (schemaErr == nil) != ex.valid {
				t.Errorf("%s %s: schema says valid=%v, want %v (%v)", def.Name, raw, schemaErr == nil, ex.valid, schemaErr)
			}
			a := decodeAnswer(t, d.call(def.Name, "call_schema", json.RawMessage(raw)))
			if handlerValid := a.Reason != "invalid_arguments"; handlerValid != ex.valid {
				t.Errorf("%s %s: handler says valid=%v, want %v: %s", def.Name, raw, handlerValid, ex.valid, a.Say)
			}
		}
	}
}

func compileSchema(t *testing.T, def dashatool.Definition) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(def.Schema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := fmt.Sprintf("https://oncecall.example.com/tools/%s.json", def.Name)
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: the schema does not compile: %v", def.Name, err)
	}
	return s
}
