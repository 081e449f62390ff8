package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBadInputIsA400NamingTheField sends, per operation and field, wrong
// types, missing fields, over-long strings and invalid phones, e-mails,
// currencies and amounts. Each gets a 400 problem+json whose field member
// names the field, and nothing is claimed or written.
func TestBadInputIsA400NamingTheField(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("+442079460555", "")
	long := func(n int) string { return strings.Repeat("x", n) }
	customerPath := "/v1/customers/" + c.String()

	type bad struct {
		body  string // a JSON object
		field string // "" for a request-level error
	}
	ops := []struct {
		method, path string
		cases        []bad
	}{
		{"POST", "/v1/payment-intents", []bad{
			{`{"amount":100,"currency":"EUR"}`, "customer_id"},
			{`{"customer_id":42,"amount":100,"currency":"EUR"}`, "customer_id"},
			{`{"customer_id":"bob","amount":100,"currency":"EUR"}`, "customer_id"},
			{fmt.Sprintf(`{"customer_id":"%s","currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":0,"currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":-100,"currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":9007199254740992,"currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":1e30,"currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":10.5,"currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":"100","currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":true,"currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":null,"currency":"EUR"}`, c), "amount"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100}`, c), "currency"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100,"currency":"EU"}`, c), "currency"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100,"currency":"ABC"}`, c), "currency"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100,"currency":"XAU"}`, c), "currency"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100,"currency":978}`, c), "currency"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100,"currency":"EUR","description":"%s"}`, c, long(501)), "description"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100,"currency":"EUR","payment_method":"visa"}`, c), "payment_method"},
			{fmt.Sprintf(`{"customer_id":"%s","amount":100,"currency":"EUR","tip":5}`, c), "tip"},
		}},
		{"POST", "/v1/payments", []bad{
			{`{}`, "payment_intent_id"},
			{`{"payment_intent_id":"pi_123"}`, "payment_intent_id"},
			{`{"payment_intent_id":["x"]}`, "payment_intent_id"},
			{fmt.Sprintf(`{"payment_intent_id":"%s","amount":0}`, c), "amount"},
			{fmt.Sprintf(`{"payment_intent_id":"%s","amount":-5}`, c), "amount"},
			{fmt.Sprintf(`{"payment_intent_id":"%s","amount":9007199254740992}`, c), "amount"},
			{fmt.Sprintf(`{"payment_intent_id":"%s","amount":1.5}`, c), "amount"},
			{fmt.Sprintf(`{"payment_intent_id":"%s","amount":"5"}`, c), "amount"},
		}},
		{"POST", "/v1/messages", []bad{
			{`{"to":"+14155550100","template":"generic","variables":{"body":"hi"}}`, "channel"},
			{`{"to":"+14155550100","channel":"fax","template":"generic","variables":{"body":"hi"}}`, "channel"},
			{`{"to":"+14155550100","channel":1,"template":"generic","variables":{"body":"hi"}}`, "channel"},
			{`{"to":"+14155550100","channel":"sms","variables":{"body":"hi"}}`, "template"},
			{`{"to":"+14155550100","channel":"sms","template":"welcome","variables":{"body":"hi"}}`, "template"},
			{`{"to":"+14155550100","channel":"sms","template":"generic"}`, "variables.body"},
			{`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"  "}}`, "variables.body"},
			{`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":5}}`, "variables.body"},
			{`{"to":"+14155550100","channel":"sms","template":"generic","variables":"hi"}`, "variables"},
			{`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"hi","colour":"red"}}`, "variables.colour"},
			{fmt.Sprintf(`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"%s"}}`, long(1001)), "variables.body"},
			{`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"a\u0000b"}}`, "variables.body"},
			{`{"to":"+14155550100","channel":"sms","template":"appointment_reminder","variables":{"name":"Ana"}}`, "variables.when"},
			{fmt.Sprintf(`{"customer_id":"%s","to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"hi"}}`, c), "to"},
			{`{"channel":"sms","template":"generic","variables":{"body":"hi"}}`, "to"},
			{`{"to":"call me","channel":"sms","template":"generic","variables":{"body":"hi"}}`, "to"},
			{`{"to":"ana@example.com","channel":"sms","template":"generic","variables":{"body":"hi"}}`, "to"},
			{`{"to":"+14155550100","channel":"email","template":"generic","variables":{"body":"hi"}}`, "to"},
			{`{"to":"ana@example","channel":"email","template":"generic","variables":{"body":"hi"}}`, "to"},
			{`{"customer_id":"nope","channel":"sms","template":"generic","variables":{"body":"hi"}}`, "customer_id"},
			{fmt.Sprintf(`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"hi"},"send_ref":"%s"}`, long(101)), "send_ref"},
			{fmt.Sprintf(`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"hi"},"subject_id":"%s"}`, long(201)), "subject_id"},
			{`{"to":"+14155550100","channel":"sms","template":"generic","variables":{"body":"hi"},"send_ref":7}`, "send_ref"},
		}},
		{"POST", "/v1/customers", []bad{
			{`{"phone":"+14155550100"}`, "name"},
			{`{"name":"  "}`, "name"},
			{`{"name":5}`, "name"},
			{fmt.Sprintf(`{"name":"%s"}`, long(201)), "name"},
			{`{"name":"Ana","phone":"12345"}`, "phone"},
			{`{"name":"Ana","phone":"07946 0958 12"}`, "phone"},
			{`{"name":"Ana","phone":"+44 abc 7946"}`, "phone"},
			{`{"name":"Ana","phone":"+4420794609581234567"}`, "phone"},
			{fmt.Sprintf(`{"name":"Ana","phone":"+44%s"}`, strings.Repeat(" ", 40)+"2079460958"), "phone"},
			{`{"name":"Ana","email":"ana"}`, "email"},
			{`{"name":"Ana","email":"Ana <ana@example.com>"}`, "email"},
			{`{"name":"Ana","email":["ana@example.com"]}`, "email"},
			{fmt.Sprintf(`{"name":"Ana","external_ref":"%s"}`, long(201)), "external_ref"},
			{`{"name":"Ana","vip":true}`, "vip"},
		}},
		{"PATCH", customerPath, []bad{
			{`{}`, ""},
			{`{"name":null}`, "name"},
			{`{"name":""}`, "name"},
			{`{"phone":""}`, "phone"},
			{`{"phone":"123"}`, "phone"},
			{`{"email":5}`, "email"},
			{`{"email":"not-an-address"}`, "email"},
			{`{"external_ref":" "}`, "external_ref"},
			{`{"points":5}`, "points"},
			{fmt.Sprintf(`{"customer_id":"%s","name":"X"}`, c), "customer_id"},
		}},
		{"PATCH", "/v1/customers/bob", []bad{{`{"name":"X"}`, "customer_id"}}},
		{"POST", customerPath + "/notes", []bad{
			{`{}`, "text"},
			{`{"text":5}`, "text"},
			{fmt.Sprintf(`{"text":"%s"}`, long(2001)), "text"},
		}},
		{"POST", customerPath + "/points", []bad{
			{`{"reason":"visit"}`, "delta"},
			{`{"delta":0,"reason":"visit"}`, "delta"},
			{`{"delta":1.5,"reason":"visit"}`, "delta"},
			{`{"delta":"5","reason":"visit"}`, "delta"},
			{`{"delta":1000000001,"reason":"visit"}`, "delta"},
			{`{"delta":-1000000001,"reason":"visit"}`, "delta"},
			{`{"delta":5}`, "reason"},
			{`{"delta":5,"reason":""}`, "reason"},
			{fmt.Sprintf(`{"delta":5,"reason":"%s"}`, long(201)), "reason"},
		}},
	}
	n := 0
	for _, o := range ops {
		for _, c := range o.cases {
			n++
			r := e.send(o.method, o.path, fmt.Sprintf("bad-%d", n), c.body)
			p := r.JSON(t)
			field, _ := p["field"].(string)
			if r.Status != http.StatusBadRequest || p["code"] != "INVALID_INPUT" || field != c.field ||
				r.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s %s %s: got %d %s, want 400 naming %q", o.method, o.path, c.body, r.Status, r.Body, c.field)
			}
		}
	}
	for _, table := range []string{"actions", "payment_intents", "payments", "messages", "customer_notes", "points_ledger"} {
		if got := e.Count("SELECT count(*) FROM " + table); got != 0 {
			t.Errorf("%d bad requests left %d rows in %s", n, got, table)
		}
	}
	if got := e.Count("SELECT count(*) FROM customers WHERE tenant_id = $1", e.tenant); got != 1 {
		t.Errorf("customers = %d, want only the fixture", got)
	}
	t.Logf("%d bad requests, all 400, nothing claimed", n)
}
