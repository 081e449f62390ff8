package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// hygieneStep is one request of the log hygiene scenario. send gets the
// X-Request-Id to send, so the step's access-log line can be found.
type hygieneStep struct {
	name   string
	send   func(requestID string) apptest.Response
	status int
}

// TestLogsCarryIdsAndNoCustomerData runs requests full of distinctive
// customer data, secrets and raw keys, then reads every captured log line:
// none may contain any of them, every request line carries request_id and
// attempt_id, and a request that maps to an action names it. New operations
// add their steps (with their own distinctive data) to the scenario.
func TestLogsCarryIdsAndNoCustomerData(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tenant, apiKey := e.Tenant("hygiene")
	// Everything in secrets must never reach a log.
	secrets := []string{apiKey, strings.TrimPrefix(apiKey, "oc_")}
	secret := func(s string) string { secrets = append(secrets, s); return s }

	ctx := context.Background()
	cust, err := e.Store.CreateCustomer(ctx, db.NewCustomer{
		TenantID: tenant.ID, Name: secret("Zebulon Quartermaine"),
		Phone: secret("+15557654321"), Email: secret("zebulon.q@hygiene.example"),
	})
	if err != nil {
		t.Fatal(err)
	}
	rival, err := e.Store.CreateCustomer(ctx, db.NewCustomer{TenantID: tenant.ID, Name: secret("Philippa Xanthopoulos")})
	if err != nil {
		t.Fatal(err)
	}
	slot, other := e.Slot(tenant.ID, 1), e.Slot(tenant.ID, 2)
	note := secret("allergic to penicillin, gate code 4471")
	bookKey := secret("book-zebulon-quartermaine-7731")
	wrongAPIKey := secret("oc_definitely-not-a-valid-api-key-9917")

	post := func(path, key string, body any, extra ...string) func(string) apptest.Response {
		return func(id string) apptest.Response {
			return e.Post(path, apiKey, key, body, append([]string{"X-Request-Id", id}, extra...)...)
		}
	}
	get := func(path, key string) func(string) apptest.Response {
		return func(id string) apptest.Response {
			return e.Request(http.MethodGet, path, key, nil, "X-Request-Id", id)
		}
	}
	booking := map[string]any{"customer_id": cust.ID, "slot_id": slot, "service": note}
	var actionID, apptID string
	steps := []hygieneStep{
		{"book", post("/v1/appointments", bookKey, booking), 201},
		{"replay", post("/v1/appointments", bookKey, booking), 201},
		{"key reused", post("/v1/appointments", bookKey, map[string]any{"customer_id": cust.ID, "slot_id": other, "service": note}), 422},
		{"slot taken", post("/v1/appointments", secret("rival-philippa-xanthopoulos"), map[string]any{"customer_id": rival.ID, "slot_id": slot}), 422},
		{"malformed json", post("/v1/appointments", secret("bad-json-zebulon"), `{"service":"`+note+`", "phone": "+15557654321"`), 400},
		{"unknown field", post("/v1/appointments", secret("unknown-field-zebulon"), map[string]any{"customer_id": cust.ID, "slot_id": other, "email": "zebulon.q@hygiene.example"}), 400},
		{"wrong type", post("/v1/appointments", secret("wrong-type-zebulon"), map[string]any{"customer_id": "Zebulon Quartermaine", "slot_id": other}), 400},
		{"invalid key", post("/v1/appointments", secret(strings.Repeat("zebulon.q@hygiene.example ", 12)), booking), 400},
		{"too large", post("/v1/appointments", secret("too-large-zebulon"), `{"service":"`+strings.Repeat("Zebulon Quartermaine ", 4000)+`"}`), 413},
		{"wrong api key", func(id string) apptest.Response {
			return e.Post("/v1/appointments", wrongAPIKey, secret("unauthorised-zebulon"), booking, "X-Request-Id", id)
		}, 401},
		{"read action", func(id string) apptest.Response { return get("/v1/actions/"+actionID, apiKey)(id) }, 200},
		{"read appointment", func(id string) apptest.Response { return get("/v1/appointments/"+apptID, apiKey)(id) }, 200},
		{"no such route", get("/v1/zebulon-quartermaine", apiKey), 404},
		// Add steps for every new operation here (customer.create with its
		// phone and e-mail, customer.note.append with its text, message.send,
		// payment.charge, Dasha tool calls), marking their data with secret().
	}

	type sent struct {
		step     hygieneStep
		actionID string
	}
	byRequestID := map[string]sent{}
	for i, s := range steps {
		id := fmt.Sprintf("hyg-%02d", i)
		r := s.send(id)
		if r.Status != s.status {
			t.Fatalf("%s: %d %s, want %d", s.name, r.Status, r.Body, s.status)
		}
		var body struct {
			ActionID string         `json:"action_id"`
			Result   map[string]any `json:"result"`
		}
		json.Unmarshal(r.Body, &body) //nolint:errcheck // non-JSON answers carry no action
		if s.name == "book" {
			actionID, apptID = body.ActionID, body.Result["id"].(string)
		}
		byRequestID[id] = sent{step: s, actionID: body.ActionID}
	}
	// A caller-supplied request id that could carry data is replaced.
	if r := e.Request(http.MethodGet, "/v1/actions/"+actionID, apiKey, nil, "X-Request-Id", secret("req-zebulon.q@hygiene.example")); r.Status != 200 {
		t.Fatalf("read with an unsafe request id: %d", r.Status)
	}

	logs := e.Logs.String()
	lower := strings.ToLower(logs)
	for _, s := range secrets {
		if strings.Contains(lower, strings.ToLower(s)) {
			t.Errorf("the logs contain %q", s)
		}
	}
	seen := map[string]bool{}
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("log line is not JSON: %v: %s", err, sc.Text())
			continue
		}
		if line["message"] != "request" {
			continue
		}
		lines++
		rid, _ := line["request_id"].(string)
		if rid == "" || line["attempt_id"] == nil || line["attempt_id"] == "" {
			t.Errorf("request line without request_id or attempt_id: %s", sc.Text())
		}
		s, ok := byRequestID[rid]
		if !ok {
			continue
		}
		seen[rid] = true
		if got, _ := line["action_id"].(string); got != s.actionID {
			t.Errorf("%s: line has action_id %q, the answer named %q: %s", s.step.name, got, s.actionID, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(steps) || lines != len(steps)+1 {
		t.Fatalf("found %d of %d steps' lines, %d request lines in all", len(seen), len(steps), lines)
	}
}
