package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// FuzzPrepare throws arbitrary bodies at every operation's Prepare: it must
// never panic, must refuse bad input with a client error (never an internal
// one), and what it accepts must be stable: preparing the normalised input
// again gives the same input and fingerprint.
func FuzzPrepare(f *testing.F) {
	ops := app.Operations().All()
	for i, o := range ops {
		for _, seed := range []string{example(o), "{}", `{"x":1}`, "[]", "null", `{"a":{"b":[1,2.50,"\u00e9"]}}`} {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, raw []byte) {
		o := ops[int(i)%len(ops)]
		p, err := o.Prepare(raw, nil)
		if err != nil {
			if code := fault.CodeOf(err); code != fault.InvalidJSON && code != fault.InvalidInput {
				t.Fatalf("%s: Prepare(%q) failed with %s, want a client error: %v", o.Name(), raw, code, err)
			}
			return
		}
		if p.Operation != o.Name() || len(p.Fingerprint) != 64 {
			t.Fatalf("%s: Prepare(%q) = operation %q fingerprint %q", o.Name(), raw, p.Operation, p.Fingerprint)
		}
		again, err := o.Prepare(p.Input, nil)
		if err != nil {
			t.Fatalf("%s: the normalised input %s of %q is refused: %v", o.Name(), p.Input, raw, err)
		}
		if again.Fingerprint != p.Fingerprint || !bytes.Equal(again.Input, p.Input) {
			t.Fatalf("%s: normalising is not stable: %q -> %s -> %s", o.Name(), raw, p.Input, again.Input)
		}
		if !slices.Equal(again.Identity, p.Identity) {
			t.Fatalf("%s: identity changed on re-preparing: %q -> %q", o.Name(), p.Identity, again.Identity)
		}
	})
}

// example builds a plausible input of o from its JSON Schema, so that every
// operation, present or future, starts with a seed that gets past decoding.
func example(o op.Operation) string {
	s := op.Schema(o)
	props, _ := s["properties"].(map[string]any)
	m := map[string]any{}
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		switch {
		case p["format"] == "date" && name == "to":
			m[name] = "2030-01-13" // slot.schedule's range: a week from Monday
		case p["format"] == "date":
			m[name] = "2030-01-07"
		case name == "to":
			continue // message.send takes customer_id or to, not both
		case (name == "practitioner_id" || name == "location_id") && props["resource"] != nil:
			continue // a practitioner's slots take no resource: the single calendar's example
		case p["type"] == "array" && strings.HasSuffix(name, "_ids"):
			m[name] = []string{fmt.Sprintf("0197a3b0-0000-7000-8000-%012d", len(m))}
		case name == "hours":
			m[name] = []map[string]string{{"weekday": "mon", "start": "09:00", "end": "17:00"}}
		case name == "timezone":
			m[name] = "Europe/London"
		case name == "variables" && p["properties"] != nil: // a template's declaration
			m[name] = map[string][]string{"required": {"name"}, "optional": {"when"}}
		case name == "variables":
			m[name] = map[string]string{"name": "Ana", "when": "Friday 9:00"}
		case p["pattern"] == "^[a-z][a-z0-9_]*$": // a template's name
			m[name] = "appointment_reminder"
		case name == "currency":
			m[name] = "EUR"
		case name == "window_end": // a callback's window, local date-times
			m[name] = "2030-01-07T16:00"
		case name == "window_start":
			m[name] = "2030-01-07T14:00"
		case name == "payment_method": // a saved card, with its Stripe customer
			m[name] = "pm_1SavedVisa"
		case name == "stripe_customer":
			m[name] = "cus_Saved42"
		case p["pattern"] != nil: // the phone pattern
			m[name] = "+442079460958"
		case p["enum"] != nil:
			m[name] = p["enum"].([]string)[0]
		case p["format"] == "uuid":
			m[name] = fmt.Sprintf("0197a3b0-0000-7000-8000-%012d", len(m))
		case p["format"] == "date-time" && strings.Contains(name, "end"):
			m[name] = "2030-01-02T10:00:00+01:00"
		case p["format"] == "date-time":
			m[name] = "2030-01-02T09:00:00+01:00"
		case p["format"] == "email":
			m[name] = "a@example.com"
		case p["type"] == "integer":
			m[name] = 100
		case p["type"] == "boolean":
			m[name] = true
		case p["type"] == "string":
			m[name] = "  Text  "
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestExamplesArePrepared keeps FuzzPrepare's seeds useful: each
// operation's example is valid input, so the fuzzer starts past decoding.
func TestExamplesArePrepared(t *testing.T) {
	t.Parallel()
	for _, o := range app.Operations().All() {
		if _, err := o.Prepare([]byte(example(o)), nil); err != nil {
			t.Errorf("%s: example %s refused: %v", o.Name(), example(o), err)
		}
	}
}
