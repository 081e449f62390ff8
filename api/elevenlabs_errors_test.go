package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/oncecall/oncecall"
)

// ElevenLabs hides a webhook tool's HTTP errors from the agent unless the
// tool passes them through, so on its route every refusal is an answer: HTTP
// 200 with outcome, reason and say, nothing claimed. A malformed body, a bad
// conversation id, an unknown tool, a missing call for a per-call tool, a
// missing, forged or other platform's key and a body past the limit each
// get one. The REST API keeps its 4xx for the same mistakes.
func TestElevenLabsAnswersEveryRefusal(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	// openapi.yaml calls these requests invalid; this route answers them
	// 200 on purpose (the answers are still checked against it).
	d.Contract.AllowUndocumentedInput()
	vapiKey, err := d.Store.AddScopedAPIKey(t.Context(), d.tenant, oncecall.ScopeVapi)
	if err != nil {
		t.Fatal(err)
	}
	book := voicePayload(t, "elevenlabs_tool.json", d.bookFill("conv-refusals", d.customer, d.slot))
	cases := []struct {
		name, path, key, body string
		headers               []string
		reason, says          string
	}{
		{"malformed JSON", "book_appointment", d.key, "{", nil, "invalid_arguments", "Nothing was done"},
		{"duplicate keys", "book_appointment", d.key, `{"a": 1, "a": 2}`, nil, "invalid_arguments", "Nothing was done"},
		{"not an object", "book_appointment", d.key, "[]", nil, "invalid_arguments", "Nothing was done"},
		{"conversation id not a string", "book_appointment", d.key, `{"system__conversation_id": 5}`, nil, "invalid_arguments", "system__conversation_id"},
		{"unknown tool", "book_everything", d.key, book, nil, "unknown_tool", "book_everything"},
		{"per-call tool without a conversation", "add_customer_note", d.key, `{"customer_id": "` + d.customer.String() + `", "text": "Prefers mornings"}`, nil, "invalid_arguments", "system__conversation_id"},
		{"no key", "book_appointment", "", book, nil, "unauthorized", "Nothing was done"},
		{"forged key", "book_appointment", "forged-" + d.key, book, nil, "unauthorized", "Nothing was done"},
		{"forged secret header", "book_appointment", "", book, []string{"X-Oncecall-Key", "forged"}, "unauthorized", "Nothing was done"},
		{"another platform's key", "book_appointment", vapiKey, book, nil, "forbidden", "Nothing was done"},
		{"body past the limit", "book_appointment", d.key, `{"note": "` + strings.Repeat("x", 70<<10) + `"}`, nil, "payload_too_large", "Nothing was done"},
	}
	for _, c := range cases {
		r := d.Post("/v1/elevenlabs/tools/"+c.path, c.key, "", c.body, c.headers...)
		if r.Status != http.StatusOK {
			t.Errorf("%s: HTTP %d %s, want 200 with an answer", c.name, r.Status, r.Body)
			continue
		}
		a := decodeAnswer(t, r)
		if a.Outcome != "rejected" || a.Reason != c.reason || !strings.Contains(a.Say, c.says) || a.ActionID != "" {
			t.Errorf("%s: %+v, want rejected %s saying %q", c.name, a, c.reason, c.says)
		}
		var details map[string]any
		if err := json.Unmarshal(a.Details, &details); err != nil || details["code"] == nil {
			t.Errorf("%s: details %s do not name the error's code", c.name, a.Details)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("refused tool calls claimed %d actions", n)
	}

	// The REST API and the other platforms keep their 4xx.
	if r := d.Post("/v1/appointments", d.key, "rest-malformed", "{"); r.Status != http.StatusBadRequest {
		t.Errorf("REST malformed body: %d %s, want 400", r.Status, r.Body)
	}
	if r := d.Post("/v1/appointments", "", "rest-nokey", map[string]any{}); r.Status != http.StatusUnauthorized {
		t.Errorf("REST without a key: %d %s, want 401", r.Status, r.Body)
	}
	if r := d.Post("/v1/retell/functions/book_appointment", d.key, "", "{"); r.Status != http.StatusBadRequest {
		t.Errorf("Retell malformed body: %d %s, want 400", r.Status, r.Body)
	}

	// A good call after the refusals books, once.
	a := decodeAnswer(t, d.Post("/v1/elevenlabs/tools/book_appointment", d.key, "", book))
	if a.Outcome != "confirmed" {
		t.Fatalf("the good call: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}
