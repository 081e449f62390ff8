package wire_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/wire"
)

// The JSON of each wire shape is the JSON oncecall answered and stored
// before the domain types lost their tags, byte for byte: field names and
// order, omitempty, null, and the time format. A stored answer is replayed
// as it was written, so a change here would make a replay differ from the
// first answer of the same action.
func TestWireJSONIsByteForByteTheRecordedShape(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
	id2 := uuid.MustParse("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c")
	t1 := time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)
	t2 := time.Date(2030, 1, 2, 10, 0, 0, 123456000, time.UTC)
	amount := int64(4500)
	const (
		i1 = `"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"`
		i2 = `"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"`
	)
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"slot", wire.FromSlot(oncecall.Slot{ID: id, StartsAt: t1, EndsAt: t2, Resource: "Dr. Lee", Available: true}),
			`{"id":` + i1 + `,"starts_at":"2030-01-02T09:00:00Z","ends_at":"2030-01-02T10:00:00.123456Z","resource":"Dr. Lee","available":true}`},
		{"practitioner's slot", wire.FromSlot(oncecall.Slot{ID: id, StartsAt: t1, EndsAt: t2, Resource: "Dr. Lee", Available: true, PractitionerID: id2, LocationID: id}),
			`{"id":` + i1 + `,"starts_at":"2030-01-02T09:00:00Z","ends_at":"2030-01-02T10:00:00.123456Z","resource":"Dr. Lee","available":true,` +
				`"practitioner_id":` + i2 + `,"location_id":` + i1 + `}`},
		{"empty slot fields", wire.FromSlot(oncecall.Slot{ID: id, StartsAt: t1, EndsAt: t2}),
			`{"id":` + i1 + `,"starts_at":"2030-01-02T09:00:00Z","ends_at":"2030-01-02T10:00:00.123456Z","resource":"","available":false}`},
		{"appointment", wire.FromAppointment(oncecall.Appointment{ID: id, CustomerID: id2, SlotID: id, Service: "checkup", Status: "active", StartsAt: t1, EndsAt: t2}),
			`{"id":` + i1 + `,"customer_id":` + i2 + `,"slot_id":` + i1 + `,"service":"checkup","status":"active","starts_at":"2030-01-02T09:00:00Z","ends_at":"2030-01-02T10:00:00.123456Z"}`},
		{"customer", wire.FromCustomer(oncecall.Customer{ID: id, Name: "Ada", Phone: "+442079460958", Email: "ada@example.com", ExternalRef: "crm-1", Points: 7, CreatedAt: t2}),
			`{"id":` + i1 + `,"name":"Ada","phone":"+442079460958","email":"ada@example.com","external_ref":"crm-1","points":7,"created_at":"2030-01-02T10:00:00.123456Z"}`},
		{"customer without contact details", wire.FromCustomer(oncecall.Customer{ID: id, Name: "Ada", CreatedAt: t1}),
			`{"id":` + i1 + `,"name":"Ada","points":0,"created_at":"2030-01-02T09:00:00Z"}`},
		{"note", wire.FromNote(oncecall.Note{ID: id, CustomerID: id2, Text: "prefers mornings", CreatedAt: t2}),
			`{"id":` + i1 + `,"customer_id":` + i2 + `,"text":"prefers mornings","created_at":"2030-01-02T10:00:00.123456Z"}`},
		{"points entry", wire.FromPointsEntry(oncecall.PointsEntry{ID: id, CustomerID: id2, Delta: -5, Reason: "redeemed", Balance: 2, CreatedAt: t2}),
			`{"id":` + i1 + `,"customer_id":` + i2 + `,"delta":-5,"reason":"redeemed","balance":2,"created_at":"2030-01-02T10:00:00.123456Z"}`},
		{"e-mail", wire.FromMessage(oncecall.Message{ID: id, CustomerID: &id2, Recipient: "ada@example.com", Channel: "email", Template: "appointment_confirmation",
			SubjectLine: "Your visit", Body: "See you", SubjectID: "x", SendRef: "r", TemplateVersion: 3, Status: "queued", CreatedAt: t2}),
			`{"id":` + i1 + `,"customer_id":` + i2 + `,"recipient":"ada@example.com","channel":"email","template":"appointment_confirmation","subject_line":"Your visit",` +
				`"body":"See you","subject_id":"x","send_ref":"r","template_version":3,"status":"queued","created_at":"2030-01-02T10:00:00.123456Z"}`},
		{"sms", wire.FromMessage(oncecall.Message{ID: id, Recipient: "+442079460958", Channel: "sms", Template: "t", Body: "b", Status: "queued", CreatedAt: t1}),
			`{"id":` + i1 + `,"recipient":"+442079460958","channel":"sms","template":"t","body":"b","status":"queued","created_at":"2030-01-02T09:00:00Z"}`},
		{"captured intent", wire.FromPaymentIntent(oncecall.PaymentIntent{ID: id, CustomerID: id2, Amount: 4500, Currency: "EUR", Description: "d",
			PaymentMethod: "pm_card_ok", Status: "captured", CapturedAmount: &amount, CreatedAt: t2, ChargingAction: id}),
			`{"id":` + i1 + `,"customer_id":` + i2 + `,"amount":4500,"currency":"EUR","description":"d","payment_method":"pm_card_ok","status":"captured",` +
				`"captured_amount":4500,"created_at":"2030-01-02T10:00:00.123456Z"}`},
		{"open intent", wire.FromPaymentIntent(oncecall.PaymentIntent{ID: id, CustomerID: id2, Amount: 4500, Currency: "EUR", PaymentMethod: "pm_card_ok",
			Status: "requires_capture", CreatedAt: t1}),
			`{"id":` + i1 + `,"customer_id":` + i2 + `,"amount":4500,"currency":"EUR","description":"","payment_method":"pm_card_ok","status":"requires_capture",` +
				`"captured_amount":null,"created_at":"2030-01-02T09:00:00Z"}`},
		{"declined payment", wire.FromPayment(oncecall.Payment{ID: id, PaymentIntentID: id2, Amount: 4500, Currency: "EUR", Status: "declined",
			DeclineCode: "card_declined", ProviderRef: "pi_1", CreatedAt: t2}),
			`{"id":` + i1 + `,"payment_intent_id":` + i2 + `,"amount":4500,"currency":"EUR","status":"declined","decline_code":"card_declined",` +
				`"provider_ref":"pi_1","created_at":"2030-01-02T10:00:00.123456Z"}`},
		{"payment", wire.FromPayment(oncecall.Payment{ID: id, PaymentIntentID: id2, Amount: 4500, Currency: "EUR", Status: "succeeded", CreatedAt: t1}),
			`{"id":` + i1 + `,"payment_intent_id":` + i2 + `,"amount":4500,"currency":"EUR","status":"succeeded","created_at":"2030-01-02T09:00:00Z"}`},
		{"step", wire.FromStep(oncecall.Step{ActionID: id, Name: "calendar", Capability: "calendar", Required: true, Operation: "appointment.book",
			ProviderKey: "k", ExternalRef: "e", Payload: []byte(`{}`), State: "unknown", ProviderRef: "p", RejectCode: "r", Attempts: 2, Checks: 1,
			LastError: "timeout", LastSentAt: &t1, NextCheckAt: t2, UpdatedAt: t1, Version: 3, ActionCreatedAt: t1, DBNow: t2}),
			`{"name":"calendar","seq":0,"capability":"calendar","required":true,"operation":"appointment.book","provider_key":"k","external_ref":"e",` +
				`"state":"unknown","provider_ref":"p","reject_code":"r","attempts":2,"checks":1,"last_error":"timeout","last_sent_at":"2030-01-02T09:00:00Z",` +
				`"next_check_at":"2030-01-02T10:00:00.123456Z","updated_at":"2030-01-02T09:00:00Z"}`},
		{"pending step", wire.FromStep(oncecall.Step{Name: "messaging.confirmation", Seq: 1, Capability: "messaging", Operation: "message.send",
			State: "pending", NextCheckAt: t2, UpdatedAt: t1}),
			`{"name":"messaging.confirmation","seq":1,"capability":"messaging","required":false,"operation":"message.send","provider_key":"",` +
				`"external_ref":"","state":"pending","attempts":0,"checks":0,"next_check_at":"2030-01-02T10:00:00.123456Z","updated_at":"2030-01-02T09:00:00Z"}`},
		{"event", wire.FromEvent(oncecall.Event{At: t2, Kind: "sent:ambiguous", Step: "calendar", Detail: json.RawMessage(`{"attempt":1}`)}),
			`{"at":"2030-01-02T10:00:00.123456Z","kind":"sent:ambiguous","step":"calendar","detail":{"attempt":1}}`},
		{"action's event", wire.FromEvent(oncecall.Event{At: t1, Kind: "claimed", Detail: json.RawMessage(`{}`)}),
			`{"at":"2030-01-02T09:00:00Z","kind":"claimed","detail":{}}`},
		{"no payments", wire.FromPayments([]oncecall.Payment{}), `[]`},
		{"no steps", wire.FromSteps(nil), `null`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// Each wire shape has exactly the properties of its openapi.yaml schema,
// and only the schema's optional properties are left out when empty.
func TestWireFieldsAreTheOpenAPISchemasProperties(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(oncecall.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	for schema, v := range map[string]any{
		"Appointment": wire.Appointment{}, "Slot": wire.Slot{}, "Customer": wire.Customer{}, "Note": wire.Note{},
		"PointsEntry": wire.PointsEntry{}, "PaymentIntent": wire.PaymentIntent{}, "Payment": wire.Payment{},
		"PaidPaymentLink": wire.PaidPaymentLink{}, "WithdrawnPaymentIntent": wire.WithdrawnPaymentIntent{},
		"Message": wire.Message{}, "Step": wire.Step{}, "Event": wire.Event{},
	} {
		ref, ok := doc.Components.Schemas[schema]
		if !ok {
			t.Errorf("openapi.yaml has no schema %s", schema)
			continue
		}
		s := ref.Value
		var names, optional []string
		for f := range reflect.TypeOf(v).Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
			if opts == "omitempty" {
				optional = append(optional, name)
			}
		}
		want := make([]string, 0, len(s.Properties))
		for p := range s.Properties {
			want = append(want, p)
		}
		slices.Sort(want)
		if got := slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
			t.Errorf("%T has the JSON fields %v; openapi.yaml's %s has the properties %v", v, got, schema, want)
		}
		for _, name := range optional {
			if slices.Contains(s.Required, name) {
				t.Errorf("%T leaves %s out when empty; openapi.yaml's %s requires it", v, name, schema)
			}
		}
		for _, name := range s.Required {
			if !slices.Contains(names, name) {
				t.Errorf("openapi.yaml's %s requires %s, which %T lacks", schema, name, v)
			}
		}
	}
}
