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
	"github.com/oncecall/oncecall/internal/op"
)

// absent, as the value of an argument in an example, leaves it out.
type absentArg struct{}

var absent any = absentArg{}

// toolExamples are arguments each tool accepts (valid) and, beyond the
// variants generated from its schema, arguments it must refuse (invalid).
// Every tool needs at least one valid example.
func toolExamples(d dashaEnv) (valid, invalid map[string][]any) {
	id := func() string { return uuid.NewString() }
	customer := d.customer.String()
	with := func(base map[string]any, extra ...any) map[string]any {
		m := make(map[string]any, len(base))
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			if extra[i+1] == absent {
				delete(m, extra[i].(string))
				continue
			}
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	book := func(extra ...any) map[string]any {
		return with(map[string]any{"customer_id": customer, "slot_id": d.slot.String()}, extra...)
	}
	charge := func(extra ...any) map[string]any { return with(map[string]any{"payment_intent_id": id()}, extra...) }
	sms := func(extra ...any) map[string]any {
		return with(map[string]any{
			"customer_id": customer, "channel": "sms", "template": "generic", "variables": map[string]any{"body": "Your table is ready."},
		}, extra...)
	}
	newCustomer := func(extra ...any) map[string]any {
		return with(map[string]any{"name": "Ana Lima", "phone": "+442079460958"}, extra...)
	}
	update := func(extra ...any) map[string]any {
		return with(map[string]any{"customer_id": customer, "name": "Ana Lima"}, extra...)
	}
	note := func(extra ...any) map[string]any {
		return with(map[string]any{"customer_id": customer, "text": "Prefers morning appointments."}, extra...)
	}
	points := func(extra ...any) map[string]any {
		return with(map[string]any{"customer_id": customer, "delta": 50, "reason": "Visit on 2 January"}, extra...)
	}
	callback := func(extra ...any) map[string]any {
		return with(map[string]any{
			"customer_id": customer, "window_start": "2030-07-05T14:00", "window_end": "2030-07-05T16:00", "reason": "Invoice question",
		}, extra...)
	}
	valid = map[string][]any{
		"request_callback": {
			callback(),
			callback("customer_id", absent, "phone", "+44 20 7946 0958", "window_start", "2030-07-05 14:00", "callback_ref", "second"),
			callback("phone", "+442079460958", "window_end", "2030-07-05T16:00:00", "reason", strings.Repeat("é", 500)),
			callback("window_end", "2030-07-19T14:00", "action_id", ""),
		},
		"cancel_callback": {
			map[string]any{"callback_id": id()},
			map[string]any{"callback_id": strings.ToUpper(id())},
		},
		"join_waitlist": {
			map[string]any{"customer_id": customer, "service_id": id()},
			map[string]any{"customer_id": customer, "practitioner_id": id(), "before": "2030-07-05", "note": "Mornings suit best."},
			map[string]any{"customer_id": strings.ToUpper(customer), "service_id": id(), "practitioner_id": strings.ToUpper(id()),
				"note": strings.Repeat("é", 500), "action_id": ""},
		},
		"cancel_waitlist_entry": {
			map[string]any{"entry_id": id()},
			map[string]any{"entry_id": strings.ToUpper(id())},
		},
		"book_appointment": {
			book(),
			book("customer_id", strings.ToUpper(customer), "service", "Haircut"),
			book("service", strings.Repeat("é", 200)),
			book("action_id", ""),
			book("slot_id", absent, "service_id", id(), "starts_at", "2030-01-02T14:00:00Z"),
			book("slot_id", absent, "service_id", id(), "starts_at", "2030-01-02T14:00", "practitioner_id", id(), "location_id", id()),
		},
		"reschedule_appointment": {
			map[string]any{"appointment_id": id(), "slot_id": id()},
			map[string]any{"appointment_id": strings.ToUpper(id()), "slot_id": id(), "action_id": ""},
		},
		"cancel_appointment": {
			map[string]any{"appointment_id": id()},
			map[string]any{"appointment_id": strings.ToUpper(id())},
		},
		"send_payment_link": {
			map[string]any{"payment_intent_id": id()},
			map[string]any{"payment_intent_id": strings.ToUpper(id())},
		},
		"charge_payment": {
			charge(),
			charge("payment_intent_id", strings.ToUpper(id()), "amount", 1050),
			charge("amount", 9007199254740991),
			json.RawMessage(`{"payment_intent_id": "` + id() + `", "amount": 1.05e3}`),
		},
		"send_message": {
			sms(),
			sms("customer_id", absent, "to", "+44 20 7946 0958", "template", "appointment_reminder",
				"variables", map[string]any{"name": "Ana", "when": "Monday at 9:00"}, "subject_id", id(), "send_ref", "second"),
			sms("channel", "email", "variables", map[string]any{"body": "Hello", "subject": "Your visit"}),
			sms("customer_id", absent, "to", "Ana@Example.com", "channel", "email", "template", "payment_receipt",
				"variables", map[string]any{"name": "Ana", "amount": "10.50 EUR"}),
			sms("send_ref", strings.Repeat("r", 100), "subject_id", strings.Repeat("s", 200)),
		},
		"create_customer": {
			newCustomer(),
			newCustomer("phone", absent, "email", "bo@example.com", "external_ref", "crm-42", "name", "Bo"),
			newCustomer("phone", "0044 (20) 7946-0959", "name", "Émile"),
			newCustomer("phone", "+1.415.555.0100", "name", strings.Repeat("é", 200)),
		},
		"update_customer": {
			update(),
			update("name", absent, "phone", nil, "email", nil, "external_ref", nil),
			update("name", absent, "phone", "+1 415 555 0100", "email", "ana@example.com"),
			update("name", absent, "external_ref", "crm-7"),
		},
		"add_customer_note": {
			note(),
			note("text", "Line one\nline two\tindented"),
			note("text", strings.Repeat("é", 2000)),
		},
		"add_loyalty_points": {
			points(),
			points("delta", -1000000000, "reason", "Redeemed a free haircut"),
			points("delta", 1000000000, "customer_id", strings.ToUpper(customer)),
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
			map[string]any{"from": "2030-01-02"},
			json.RawMessage(`{"limit": 2.0}`),
			map[string]any{"service_id": id(), "practitioner_id": id(), "date": "tomorrow", "part_of_day": "afternoon"},
			map[string]any{"from": "2030-01-02", "to": "2030-01-05T12:00:00Z", "part_of_day": "morning", "after": id()},
			map[string]any{"date": "2030-01-02", "part_of_day": "evening", "limit": 20},
		},
		// Without phone, find_customer looks up the call's number; these
		// payloads carry none, so only calls with a phone are valid here
		// (see schemaGaps and TestDashaFindCustomerReadsTheCallersNumber).
		"find_customer": {
			map[string]any{"phone": "+442079460958"},
			map[string]any{"phone": "0044 (20) 7946-0958"},
			map[string]any{"phone": "+1.415.555.0100"},
		},
		"get_customer": {
			map[string]any{"customer_id": customer},
			map[string]any{"customer_id": strings.ToUpper(customer)},
			map[string]any{"customer_id": id()}, // no such customer: a customer_not_found answer, not invalid
		},
		"list_appointments": {
			map[string]any{"customer_id": customer},
			map[string]any{"customer_id": customer, "limit": 1},
			map[string]any{"customer_id": id(), "limit": 20},
			json.RawMessage(`{"customer_id": "` + customer + `", "limit": 3.0}`),
		},
		"list_payment_intents": {
			map[string]any{"customer_id": customer},
			map[string]any{"customer_id": customer, "limit": 20},
			map[string]any{"customer_id": id(), "limit": 1}, // no such customer: customer_not_found, not invalid
		},
		"list_services": {
			map[string]any{},
			map[string]any{"practitioner_id": id()},
			map[string]any{"location_id": strings.ToUpper(id()), "practitioner_id": id()},
		},
		"list_practitioners": {
			map[string]any{},
			map[string]any{"service_id": id()},
			map[string]any{"location_id": id(), "service_id": strings.ToUpper(id())},
		},
	}
	invalid = map[string][]any{
		"book_appointment": {
			book("service", strings.Repeat("a", 201)),
			book("action_id", strings.Repeat("k", 256)),
			book("action_id", "ключ"),
			book("action_id", "line\nbreak"),
			// An action_id is an earlier answer's, never a word of the model's.
			book("action_id", "retry-1"),
			book("action_id", "none"),
			book("action_id", id()+"0"),
			book("action_id", "{"+id()+"}"),
			book("customer_id", ""),
			book("customer_id", customer+"0"),
		},
		"send_payment_link": {
			map[string]any{"payment_intent_id": ""},
			map[string]any{"payment_intent_id": "cs_123"},
			map[string]any{"payment_intent_id": id(), "amount": 100},
		},
		"charge_payment": {
			charge("amount", 0),
			charge("amount", -5),
			charge("amount", 9007199254740992),
			charge("amount", 10.5),
			charge("payment_intent_id", ""),
			charge("payment_intent_id", "pi_123"),
		},
		"send_message": {
			sms("channel", "fax"),
			sms("template", "Poem"),
			sms("template", "poem-1"),
			sms("send_ref", strings.Repeat("r", 101)),
			sms("subject_id", strings.Repeat("s", 201)),
			sms("customer_id", absent, "to", "+44"+strings.Repeat("1", 252)),
			sms("variables", map[string]any{"body": 5}),
			sms("variables", map[string]any{"body": nil}),
			sms("variables", []any{"Your table is ready."}),
		},
		"create_customer": {
			newCustomer("name", strings.Repeat("a", 201)),
			newCustomer("name", ""),
			newCustomer("phone", "02079460958"),
			newCustomer("phone", "+0442079460958"),
			newCustomer("phone", "+44 20 7946 0958 ext 2"),
			newCustomer("phone", "+44 20 7946 0958 0000 0000 0000 0"),
			newCustomer("email", "not an address"),
			newCustomer("email", "Ana <ana@example.com>"),
			newCustomer("external_ref", strings.Repeat("x", 201)),
		},
		"update_customer": {
			update("phone", ""),
			update("phone", "12345"),
			update("email", "ana at example.com"),
			update("name", strings.Repeat("a", 201)),
			update("name", ""),
			update("external_ref", ""),
			update("email", ""),
			update("customer_id", "Ana"),
		},
		"request_callback": {
			callback("window_start", "2030-07-05T14:00:00+01:00"),
			callback("window_end", "2030-07-05T16:00Z"),
			callback("window_start", "5 July at 14:00"),
			callback("window_start", "2030-07-05T14:00:30"),
			callback("reason", strings.Repeat("a", 501)),
			callback("reason", ""),
			callback("phone", "020 7946 0958"),
			callback("callback_ref", strings.Repeat("a", 101)),
		},
		"cancel_callback": {
			map[string]any{"callback_id": "cb-1"},
		},
		"join_waitlist": {
			map[string]any{"customer_id": customer, "service_id": id(), "before": "5 July"},
			map[string]any{"customer_id": customer, "service_id": id(), "before": "2030-07-05T10:00"},
			map[string]any{"customer_id": customer, "service_id": id(), "before": "2030-7-5"},
			map[string]any{"customer_id": customer, "service_id": id(), "before": "2030-02-30"},
			map[string]any{"customer_id": customer, "service_id": id(), "note": strings.Repeat("a", 501)},
			map[string]any{"customer_id": customer, "service_id": "cleaning"},
			map[string]any{"customer_id": customer, "practitioner_id": "Dr. Ortiz"},
			map[string]any{"customer_id": "", "service_id": id()},
		},
		"cancel_waitlist_entry": {
			map[string]any{"entry_id": "wl-1"},
			map[string]any{},
		},
		"add_customer_note": {
			note("text", strings.Repeat("a", 2001)),
			note("text", ""),
		},
		"add_loyalty_points": {
			points("delta", 1000000001),
			points("delta", -1000000001),
			points("delta", 2.5),
			points("reason", strings.Repeat("a", 201)),
			points("reason", ""),
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
			map[string]any{"date": "next week"},
			map[string]any{"part_of_day": "night"},
			map[string]any{"to": "soon"},
			map[string]any{"service_id": "cleaning"},
		},
		"find_customer": {
			map[string]any{"phone": "02079460958"},
			map[string]any{"phone": "+0442079460958"},
			map[string]any{"phone": "+44 20 7946 0958 ext 2"},
			map[string]any{"phone": "+44 20 7946 0958 0000 0000 0000 0"},
		},
		"get_customer": {
			map[string]any{},
			map[string]any{"customer_id": "Ana Lima"},
		},
		"list_appointments": {
			map[string]any{"limit": 5},
			map[string]any{"customer_id": customer, "limit": 0},
			map[string]any{"customer_id": customer, "limit": 21},
			map[string]any{"customer_id": customer, "limit": 2.5},
		},
		"list_payment_intents": {
			map[string]any{},
			map[string]any{"customer_id": "Ana Lima"},
			map[string]any{"customer_id": customer, "limit": 21},
		},
		"list_services": {
			map[string]any{"practitioner_id": "Dr. Ortiz"},
			map[string]any{"location_id": 7},
		},
		"list_practitioners": {
			map[string]any{"service_id": "Cleaning"},
			map[string]any{"name": "Dr. Ortiz"},
		},
	}
	return valid, invalid
}

// schemaGap is arguments a tool's schema accepts and its handler refuses,
// naming field: rules across arguments (exactly one recipient, a template's
// variables, at least one change), a zero delta, blank or control-character
// text, e-mail domains without a dot, and find_customer without a phone on
// a call that carries no number. The schema stays within the JSON
// Schema keywords every model provider takes (no oneOf, if/then or not), so
// these rules are in the descriptions and the handler answers them with an
// invalid_arguments say naming the field; nothing is claimed.
type schemaGap struct {
	args  map[string]any
	field string
}

func schemaGaps(d dashaEnv) map[string][]schemaGap {
	customer := d.customer.String()
	// Each gap gets its own send_ref: checks that need the tenant's
	// templates run when the action is claimed, after its identity is looked
	// up, so a gap sharing an earlier call's identity would be answered
	// conflicting_request instead (the earlier action stands).
	n := 0
	sms := func(args map[string]any) map[string]any {
		n++
		m := map[string]any{"channel": "sms", "template": "generic", "variables": map[string]any{"body": "Hi"}, "send_ref": fmt.Sprintf("gap-%d", n)}
		for k, v := range args {
			m[k] = v
		}
		return m
	}
	return map[string][]schemaGap{
		// No phone and no number in the call: nothing to look up.
		"find_customer": {
			{map[string]any{}, "phone"},
		},
		"send_message": {
			{sms(nil), "to"},
			{sms(map[string]any{"customer_id": customer, "to": "+442079460958"}), "to"},
			{sms(map[string]any{"to": "ana@example.com"}), "to"},
			{sms(map[string]any{"to": "+442079460958", "channel": "email"}), "to"},
			{sms(map[string]any{"customer_id": customer, "variables": map[string]any{}}), "variables.body"},
			{sms(map[string]any{"customer_id": customer, "variables": map[string]any{"body": "Hi", "when": "Monday"}}), "variables.when"},
			{sms(map[string]any{"customer_id": customer, "variables": map[string]any{"body": "   "}}), "variables.body"},
			{sms(map[string]any{"customer_id": customer, "template": "poem"}), "template"},
			{sms(map[string]any{"customer_id": customer, "channel": "email", "template": "appointment_reminder",
				"variables": map[string]any{"name": "Ana", "when": "Monday", "body": "x"}}), "variables.body"},
		},
		"create_customer": {
			{map[string]any{"name": "   "}, "name"},
			{map[string]any{"name": "Ana\u0007"}, "name"},
			{map[string]any{"name": "Ana", "email": "ana@localhost"}, "email"},
		},
		"update_customer": {
			{map[string]any{"customer_id": customer}, "arguments"},
			{map[string]any{"customer_id": customer, "name": nil}, "name"},
			{map[string]any{"customer_id": customer, "name": " "}, "name"},
		},
		"add_customer_note": {
			{map[string]any{"customer_id": customer, "text": "  "}, "text"},
			{map[string]any{"customer_id": customer, "text": "bell\u0007"}, "text"},
		},
		"request_callback": {
			{map[string]any{"window_start": "2030-07-05T14:00", "window_end": "2030-07-05T16:00", "reason": "Invoice"}, "customer_id"},
			{map[string]any{"customer_id": customer, "window_start": "2030-07-05T16:00", "window_end": "2030-07-05T14:00", "reason": "Invoice"}, "window_end"},
			{map[string]any{"customer_id": customer, "window_start": "2030-07-05T14:00", "window_end": "2030-07-25T14:00", "reason": "Invoice"}, "window_end"},
			{map[string]any{"customer_id": customer, "window_start": "2030-02-30T14:00", "window_end": "2030-03-01T14:00", "reason": "Invoice"}, "window_start"},
			{map[string]any{"customer_id": customer, "window_start": "2020-07-05T14:00", "window_end": "2020-07-05T16:00", "reason": "Invoice"}, "window_end"},
			{map[string]any{"customer_id": customer, "window_start": "2030-07-05T14:00", "window_end": "2030-07-05T16:00", "reason": " "}, "reason"},
		},
		// A waitlist entry names a service or a practitioner, and a date
		// after today on the tenant's clock.
		"join_waitlist": {
			{map[string]any{"customer_id": customer}, "service_id"},
			{map[string]any{"customer_id": customer, "service_id": d.slot.String(), "before": "2020-07-05"}, "before"},
			{map[string]any{"customer_id": customer, "service_id": d.slot.String(), "note": "bell\u0007"}, "note"},
		},
		// A booking takes slot_id, or service_id and starts_at.
		"book_appointment": {
			{map[string]any{"customer_id": customer}, "slot_id"},
			{map[string]any{"customer_id": customer, "slot_id": d.slot.String(), "service_id": d.slot.String()}, "service_id"},
			{map[string]any{"customer_id": customer, "service_id": d.slot.String()}, "starts_at"},
			{map[string]any{"customer_id": customer, "service_id": d.slot.String(), "starts_at": "at two"}, "starts_at"},
			// An action_id of the right form that names no action of the business.
			{map[string]any{"customer_id": customer, "slot_id": d.slot.String(), "action_id": uuid.NewString()}, "action_id"},
		},
		"find_available_slots": {
			{map[string]any{"date": "tomorrow", "from": "2030-01-02"}, "date"},
			{map[string]any{"location_id": d.slot.String()}, "location_id"}, // no such location
		},
		"add_loyalty_points": {
			{map[string]any{"customer_id": customer, "delta": 0, "reason": "Visit"}, "delta"},
			{map[string]any{"customer_id": customer, "delta": 5, "reason": " "}, "reason"},
		},
	}
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
		typ, _ := p["type"].(string)
		if types, ok := p["type"].([]string); ok {
			typ = types[0] // ["string", "null"]
		}
		wrong := map[string]any{"string": 42, "integer": "7", "boolean": "yes", "object": "x", "array": "x"}[typ]
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
		case "email":
			m = clone()
			m[name] = "ana.example.com"
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
		props, _ := def.Schema["properties"].(map[string]any)
		if phone, ok := props["phone"].(map[string]any); ok && phone["pattern"] != op.PhonePattern {
			t.Errorf("%s: phone pattern %v is not op.PhonePattern", def.Name, phone["pattern"])
		}
	}
	for name, gaps := range schemaGaps(d) {
		var def *dashatool.Definition
		for i := range defs {
			if defs[i].Name == name {
				def = &defs[i]
			}
		}
		if def == nil {
			t.Errorf("schemaGaps names no tool %s", name)
			continue
		}
		schema := compileSchema(t, *def)
		for _, g := range gaps {
			raw, err := json.Marshal(g.args)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("%s %s: the schema now refuses it; move it to the invalid examples (%v)", name, raw, err)
			}
			a := decodeAnswer(t, d.call(name, "call_schema", json.RawMessage(raw)))
			var details map[string]string
			_ = json.Unmarshal(a.Details, &details)
			if a.Outcome != "rejected" || a.Reason != "invalid_arguments" || a.ActionID != "" || details["field"] != g.field ||
				!strings.Contains(a.Say, g.field) {
				t.Errorf("%s %s: want invalid_arguments naming %s, got %+v", name, raw, g.field, a)
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
