package app_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/op"
)

// TestAgentPhrasing: every payment, message and customer operation tells an
// agent what to say for each outcome and each rejection reason it can
// produce, and its pending phrase says the request is not confirmed.
func TestAgentPhrasing(t *testing.T) {
	t.Parallel()
	reg := app.Operations()
	reasons := map[string][]string{
		"payment_intent.create": {"CUSTOMER_NOT_FOUND"},
		"payment.charge":        {"PAYMENT_INTENT_NOT_FOUND", "INTENT_ALREADY_CAPTURED", "PAYMENT_DECLINED", "AMOUNT_EXCEEDS_INTENT"},
		"message.send":          {"CUSTOMER_NOT_FOUND", "CUSTOMER_HAS_NO_PHONE", "CUSTOMER_HAS_NO_EMAIL"},
		"customer.create":       {"CUSTOMER_EXISTS"},
		"customer.update":       {"CUSTOMER_NOT_FOUND", "CUSTOMER_EXISTS"},
		"customer.note.append":  {"CUSTOMER_NOT_FOUND"},
		"customer.points.add":   {"CUSTOMER_NOT_FOUND", "INSUFFICIENT_POINTS"},
		"callback.request":      {"CUSTOMER_NOT_FOUND"},
		"callback.cancel":       {"CALLBACK_NOT_FOUND", "CALLBACK_NOT_ACTIVE"},
		"waitlist.join":         {"CUSTOMER_NOT_FOUND", "SERVICE_NOT_FOUND", "PRACTITIONER_NOT_FOUND"},
		"waitlist.cancel":       {"WAITLIST_ENTRY_NOT_FOUND", "WAITLIST_ENTRY_NOT_ACTIVE"},
		// What a remote calendar, or the checks before one is written to,
		// may answer.
		"appointment.book": {"CUSTOMER_NOT_FOUND", "SLOT_NOT_FOUND", "SLOT_UNAVAILABLE", "CALENDAR_NOT_MAPPED", "EVENT_CANCELLED",
			"CUSTOMER_HAS_NO_CONTACT", "ALREADY_BOOKED_IN_CALL", "BOOKING_IN_PROGRESS"},
		"appointment.reschedule": {"SLOT_UNAVAILABLE", "SLOT_NOT_FOUND", "APPOINTMENT_NOT_FOUND", "APPOINTMENT_NOT_ACTIVE",
			"APPOINTMENT_CHANGE_IN_PROGRESS", "SLOT_OTHER_CALENDAR", "EVENT_CHANGED", "EVENT_CANCELLED", "EVENT_NOT_FOUND",
			"CALENDAR_CHANGED"},
		"appointment.cancel": {"APPOINTMENT_NOT_ACTIVE", "APPOINTMENT_CHANGE_IN_PROGRESS", "CALENDAR_CHANGED"},
	}
	for name, codes := range reasons {
		o, ok := reg.Get(name)
		if !ok {
			t.Errorf("%s is not registered", name)
			continue
		}
		say := o.Phrases()
		if say.Confirmed == "" || say.Rejected[""] == "" {
			t.Errorf("%s: no confirmed or fallback rejected phrase", name)
		}
		if !strings.Contains(strings.ToLower(say.Pending), "not confirmed") {
			t.Errorf("%s: pending phrase %q does not say the request is not confirmed", name, say.Pending)
		}
		for _, c := range codes {
			if say.Rejected[c] == "" {
				t.Errorf("%s: no phrase for %s", name, c)
			}
		}
	}
}

func TestToolsAndIdentities(t *testing.T) {
	t.Parallel()
	reg := app.Operations()
	for name, want := range map[string]struct {
		tool    string
		perCall bool
	}{
		"payment_intent.create": {"", false},
		"payment.charge":        {"charge_payment", false},
		"message.send":          {"send_message", true},
		"customer.create":       {"create_customer", false},
		"customer.update":       {"update_customer", true},
		"customer.note.append":  {"add_customer_note", true},
		"customer.points.add":   {"add_loyalty_points", true},
		"callback.request":      {"request_callback", true},
		"callback.cancel":       {"cancel_callback", false},
		"waitlist.join":         {"join_waitlist", true},
		"waitlist.cancel":       {"cancel_waitlist_entry", false},
	} {
		o := reg.MustGet(name)
		if o.Tool() != want.tool || o.PerCall() != want.perCall {
			t.Errorf("%s: tool %q per-call %v, want %q %v", name, o.Tool(), o.PerCall(), want.tool, want.perCall)
		}
	}
	cases := []struct {
		operation, body string
		want            []string
	}{
		{"payment.charge", `{"payment_intent_id":"0190A8C2-7F3E-7000-8000-000000000001","amount":5}`, []string{"0190a8c2-7f3e-7000-8000-000000000001"}},
		{"message.send", `{"to":"+1 415 555 0100","channel":"sms","template":"generic","variables":{"body":"hi"},"send_ref":"2"}`,
			[]string{"to:+14155550100", "sms", "generic", "", "2"}},
		{"customer.create", `{"name":"Ana","phone":"0044 20 7946 0958","external_ref":"r1"}`, []string{"phone", "+442079460958"}},
		{"customer.create", `{"name":"Ana","external_ref":" r1 "}`, []string{"external_ref", "r1"}},
		{"customer.update", `{"customer_id":"0190a8c2-7f3e-7000-8000-000000000001","email":null}`, []string{"0190a8c2-7f3e-7000-8000-000000000001", "email=null"}},
		{"customer.note.append", `{"customer_id":"0190a8c2-7f3e-7000-8000-000000000001","text":" hi "}`, []string{"0190a8c2-7f3e-7000-8000-000000000001", "", "hi"}},
		{"customer.note.append", `{"customer_id":"0190a8c2-7f3e-7000-8000-000000000001","text":"hi","note_ref":"2"}`, []string{"0190a8c2-7f3e-7000-8000-000000000001", "2", "hi"}},
		// A points change is its delta, not the wording of its reason.
		{"customer.points.add", `{"customer_id":"0190a8c2-7f3e-7000-8000-000000000001","delta":5,"reason":"visit"}`, []string{"0190a8c2-7f3e-7000-8000-000000000001", "5", ""}},
		{"customer.points.add", `{"customer_id":"0190a8c2-7f3e-7000-8000-000000000001","delta":5,"reason":"Visit!","points_ref":"b"}`, []string{"0190a8c2-7f3e-7000-8000-000000000001", "5", "b"}},
		// A callback's identity is every field, its window spelled one way.
		{"callback.request", `{"phone":"0044 20 7946 0958","window_start":"2030-07-05 14:00","window_end":"2030-07-05T16:00:00","reason":" Invoice "}`,
			[]string{`{"callback_ref":"","customer_id":"","phone":"+442079460958","reason":"Invoice","window_end":"2030-07-05T16:00","window_start":"2030-07-05T14:00"}`}},
		{"callback.cancel", `{"callback_id":"0190A8C2-7F3E-7000-8000-000000000001"}`, []string{"0190a8c2-7f3e-7000-8000-000000000001"}},
		// A waitlist entry's identity is every field, as normalised.
		{"waitlist.join", `{"customer_id":"0190A8C2-7F3E-7000-8000-000000000001","practitioner_id":" 0190a8c2-7f3e-7000-8000-000000000002 ","before":" 2030-07-05 ","note":" Mornings "}`,
			[]string{`{"before":"2030-07-05","customer_id":"0190a8c2-7f3e-7000-8000-000000000001","note":"Mornings","practitioner_id":"0190a8c2-7f3e-7000-8000-000000000002","service_id":""}`}},
		{"waitlist.cancel", `{"entry_id":"0190A8C2-7F3E-7000-8000-000000000003"}`, []string{"0190a8c2-7f3e-7000-8000-000000000003"}},
	}
	for _, c := range cases {
		p, err := reg.MustGet(c.operation).Prepare([]byte(c.body), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.operation, err)
		}
		if !reflect.DeepEqual(p.Identity, c.want) {
			t.Errorf("%s identity = %q, want %q", c.operation, p.Identity, c.want)
		}
	}
	// A customer known by name alone is known only within its call.
	for body, want := range map[string]bool{
		`{"name":"John Smith"}`: true, `{"name":"John Smith","email":"j@example.com"}`: false, `{"name":"Ana","phone":"+442079460958"}`: false,
	} {
		p, err := reg.MustGet("customer.create").Prepare([]byte(body), nil)
		if err != nil || p.PerCall != want {
			t.Errorf("customer.create %s: per-call %v (%v), want %v", body, p.PerCall, err, want)
		}
	}
}

func TestSchemasDescribeTheInput(t *testing.T) {
	t.Parallel()
	reg := app.Operations()
	prop := func(operation, field string) map[string]any {
		s := op.Schema(reg.MustGet(operation))
		p, ok := s["properties"].(map[string]any)[field].(map[string]any)
		if !ok {
			t.Fatalf("%s has no property %s: %v", operation, field, s)
		}
		return p
	}
	if p := prop("payment.charge", "amount"); p["type"] != "integer" || p["minimum"] != int64(1) || p["maximum"] != int64(op.MaxAmount) {
		t.Errorf("charge amount: %v", p)
	}
	if p := prop("message.send", "variables"); p["type"] != "object" {
		t.Errorf("variables: %v", p)
	}
	if p := prop("customer.update", "phone"); !reflect.DeepEqual(p["type"], []string{"string", "null"}) {
		t.Errorf("update phone: %v", p)
	}
	if p := prop("customer.points.add", "delta"); p["type"] != "integer" {
		t.Errorf("delta: %v", p)
	}
	for _, name := range []string{"payment.charge", "message.send", "customer.create", "customer.update", "customer.note.append", "customer.points.add"} {
		s := op.Schema(reg.MustGet(name))
		for field, p := range s["properties"].(map[string]any) {
			if p.(map[string]any)["description"] == nil {
				t.Errorf("%s.%s has no description", name, field)
			}
		}
	}
}

// Every operation has words for staff: the console shows its Label
// ("Waitlist entry"), never only its name.
func TestEveryOperationHasALabel(t *testing.T) {
	t.Parallel()
	labels := map[string]string{}
	for _, o := range app.Operations().All() {
		if o.Label() == "" || o.Label() == o.Name() {
			t.Errorf("operation %s has no Label for the console", o.Name())
		}
		if other, dup := labels[o.Label()]; dup {
			t.Errorf("operations %s and %s have the same Label %q", other, o.Name(), o.Label())
		}
		labels[o.Label()] = o.Name()
	}
}
