package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Field names are exact: a key that differs from a field only in case (or
// in Unicode folding, "ſlot_id") is not that field. Go's encoding/json
// matches them anyway, last one wins, so {"slot_id":S1,"Slot_id":S2} used to
// book one of them and {"CUSTOMER_ID":...} was accepted. In a REST body, in
// Dasha arguments (as an object or as a string holding one) and in the
// webhook payload itself, each is refused, naming the key, and nothing is
// claimed.
func TestFieldNamesDifferingOnlyInCaseAreRefused(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	d.Contract.AllowUndocumentedInput()
	other := d.Slot(d.tenant, 2)
	c, s1, s2 := d.customer, d.slot, other

	rest := []struct {
		path, body, field string
	}{
		{"/v1/appointments", fmt.Sprintf(`{"customer_id":"%s","slot_id":"%s","Slot_id":"%s"}`, c, s1, s2), "Slot_id"},
		{"/v1/appointments", fmt.Sprintf(`{"Slot_id":"%s","customer_id":"%s","slot_id":"%s"}`, s2, c, s1), "Slot_id"},
		{"/v1/appointments", fmt.Sprintf(`{"CUSTOMER_ID":"%s","SLOT_ID":"%s"}`, c, s1), "CUSTOMER_ID"},
		{"/v1/appointments", fmt.Sprintf(`{"customer_id":"%s","ſlot_id":"%s"}`, c, s1), "ſlot_id"},
		{"/v1/customers", `{"Name":"Ana"}`, "Name"},
		{"/v1/customers/" + c.String() + "/points", `{"delta":5,"Delta":500,"reason":"gift"}`, "Delta"},
	}
	for i, r := range rest {
		got := d.Post(r.path, d.key, fmt.Sprintf("case-%d", i), r.body)
		p := got.JSON(t)
		if got.Status != http.StatusBadRequest || p["code"] != "INVALID_INPUT" || p["field"] != r.field {
			t.Errorf("REST %s %s: %d %s, want 400 INVALID_INPUT naming %s", r.path, r.body, got.Status, got.Body, r.field)
		}
	}

	args := []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"customer_id": c, "slot_id": s1, "Slot_id": s2}, "Slot_id"},
		{map[string]any{"CUSTOMER_ID": c, "SLOT_ID": s1}, "CUSTOMER_ID"},
		{map[string]any{"customer_id": c, "slot_id": s1, "Action_ID": "my-key"}, "Action_ID"},
	}
	for i, a := range args {
		encoded, err := json.Marshal(a.args)
		if err != nil {
			t.Fatal(err)
		}
		for form, v := range map[string]any{"object": a.args, "string": string(encoded)} {
			r := d.call("book_appointment", fmt.Sprintf("call_%d_%s", i, form), v)
			ans := decodeAnswer(t, r)
			var details map[string]string
			_ = json.Unmarshal(ans.Details, &details)
			if ans.Outcome != "rejected" || ans.Reason != "invalid_arguments" || details["field"] != a.field {
				t.Errorf("Dasha %s arguments %s: %s, want invalid_arguments naming %s", form, encoded, r.Body, a.field)
			}
		}
	}
	read := d.call("find_available_slots", "call_read", map[string]any{"Date": "2030-01-01"})
	if ans := decodeAnswer(t, read); ans.Reason != "invalid_arguments" || !strings.Contains(ans.Say, "Date") {
		t.Errorf("read tool with a case variant: %s", read.Body)
	}

	// The payload's own fields: a second "Arguments" must not replace the
	// arguments.
	p := payload("book_appointment", "call_payload", d.bookArgs(s1))
	p["Arguments"] = d.bookArgs(s2)
	r := d.Post("/v1/dasha/tools/book_appointment", d.key, "", p)
	if pr := r.JSON(t); r.Status != http.StatusBadRequest || pr["field"] != "Arguments" {
		t.Errorf("payload with arguments and Arguments: %d %s, want 400 naming Arguments", r.Status, r.Body)
	}

	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Errorf("refused inputs claimed %d actions", n)
	}
	if n := d.Count("SELECT count(*) FROM appointments"); n != 0 {
		t.Errorf("refused inputs booked %d appointments", n)
	}
	if n := d.Count("SELECT count(*) FROM customers WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Errorf("refused inputs left %d customers, want the 1 set up", n)
	}
}
