package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// The sample payloads in testdata/voice are the platforms' documented tool
// call shapes, with {{CALL}}, {{TOOLCALL}}, {{CUSTOMER}} and {{SLOT}} filled
// in per test.

// voicePayload reads testdata/voice/name and fills in its placeholders.
func voicePayload(t *testing.T, name string, fill map[string]string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/voice/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range fill {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	if strings.Contains(s, "{{") {
		t.Fatalf("%s: a placeholder is left: %s", name, s)
	}
	return s
}

// vapiResult is one result of a Vapi tool-calls answer.
type vapiResult struct {
	ToolCallID string `json:"toolCallId"`
	Result     string `json:"result"`
	Error      string `json:"error"`
}

// vapiResults decodes a tool-calls answer and each result's answer.
func vapiResults(t *testing.T, r apptest.Response) ([]vapiResult, []answer) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("want 200, got %d: %s", r.Status, r.Body)
	}
	var body struct {
		Results []vapiResult `json:"results"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("answer: %v: %s", err, r.Body)
	}
	answers := make([]answer, len(body.Results))
	for i, res := range body.Results {
		if strings.Contains(res.Result, "\n") {
			t.Errorf("result %d is not one line: %q", i, res.Result)
		}
		answers[i] = decodeAnswer(t, apptest.Response{
			Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(res.Result),
		})
	}
	return body.Results, answers
}

// refusalOf returns the HTTP status and the message of a refused call: the
// problem's, or for ElevenLabs, whose refusals are 200 answers, the ones the
// answer's details keep. A call that was not refused returns its status.
func refusalOf(t *testing.T, platform string, r apptest.Response) (int, string) {
	t.Helper()
	if platform == "elevenlabs" && r.Status == http.StatusOK {
		var a struct {
			Outcome string `json:"outcome"`
			Details struct {
				Status  int    `json:"http_status"`
				Message string `json:"message"`
			} `json:"details"`
		}
		if json.Unmarshal(r.Body, &a) == nil && a.Outcome != "confirmed" && a.Details.Status != 0 {
			return a.Details.Status, a.Details.Message
		}
		return r.Status, string(r.Body)
	}
	var p struct {
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(r.Body, &p)
	return r.Status, p.Detail + string(r.Body)
}

func (d dashaEnv) bookFill(call string, customer, slot uuid.UUID) map[string]string {
	return map[string]string{"CALL": call, "TOOLCALL": "call_" + uuid.NewString()[:8], "CUSTOMER": customer.String(), "SLOT": slot.String()}
}

// The first promise: a Vapi tool-calls message booking a slot and
// the same message re-sent with a new toolCall id (the model re-invoked the
// tool) give one appointment and two results, each with its own id.
func TestVapiToolCallRetriedWithANewIDIsOneAppointment(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	fill := d.bookFill("vapi-call-1", d.customer, d.slot)
	fill["TOOLCALL"] = "toolu_first"
	first := d.Post("/v1/vapi/webhook", d.key, "", voicePayload(t, "vapi_tool_calls.json", fill))
	fill["TOOLCALL"] = "toolu_second"
	second := d.Post("/v1/vapi/webhook", d.key, "", voicePayload(t, "vapi_tool_calls.json", fill))

	r1, a1 := vapiResults(t, first)
	r2, a2 := vapiResults(t, second)
	if len(r1) != 1 || len(r2) != 1 || r1[0].ToolCallID != "toolu_first" || r2[0].ToolCallID != "toolu_second" {
		t.Fatalf("results: %+v and %+v", r1, r2)
	}
	if a1[0].Outcome != "confirmed" || a2[0].Outcome != "confirmed" || a1[0].ActionID != a2[0].ActionID {
		t.Fatalf("answers: %+v and %+v", a1[0], a2[0])
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE call_platform = 'vapi' AND call_id = 'vapi-call-1'"); n != 1 {
		t.Fatalf("actions of the call = %d, want 1", n)
	}
}

// Vapi's {id, name, arguments} shape with the arguments as a JSON string in
// another key order names the same action as the {id, function} shape.
func TestVapiAcceptsBothToolCallShapes(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	fill := d.bookFill("vapi-call-2", d.customer, d.slot)
	_, a1 := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", voicePayload(t, "vapi_tool_calls.json", fill)))
	fill["TOOLCALL"] = "toolu_flat"
	r2, a2 := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", voicePayload(t, "vapi_tool_calls_flat.json", fill)))
	if r2[0].ToolCallID != "toolu_flat" || a2[0].ActionID != a1[0].ActionID || a2[0].Outcome != "confirmed" {
		t.Fatalf("flat shape: %+v %+v, first %+v", r2, a2, a1)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}

// Two tool calls in one message are answered in order; an unknown tool is
// an error result, not a confirmation, and the call's end nudges the call's
// actions.
func TestVapiAnswersEachToolCallInOrder(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	msg := map[string]any{"message": map[string]any{
		"type": "tool-calls", "call": map[string]any{"id": "vapi-call-3"},
		"toolCallList": []any{
			map[string]any{"id": "t1", "name": "find_available_slots", "arguments": map[string]any{}},
			map[string]any{"id": "t2", "name": "no_such_tool", "arguments": map[string]any{}},
			map[string]any{"id": "t3", "function": map[string]any{"name": "check_action_status", "arguments": `{"action_id":"` + uuid.NewString() + `"}`}},
		},
	}}
	r := d.Post("/v1/vapi/webhook", d.key, "", msg)
	var body struct {
		Results []vapiResult `json:"results"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &body) != nil || len(body.Results) != 3 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	for i, want := range []string{"t1", "t2", "t3"} {
		if body.Results[i].ToolCallID != want {
			t.Fatalf("result %d is for %s, want %s", i, body.Results[i].ToolCallID, want)
		}
	}
	if body.Results[1].Error == "" || body.Results[1].Result != "" {
		t.Fatalf("unknown tool: %+v", body.Results[1])
	}
	ended := d.Post("/v1/vapi/webhook", d.key, "", voicePayload(t, "vapi_status_update.json", map[string]string{"CALL": "vapi-call-3"}))
	if ended.Status != http.StatusOK || ended.JSON(t)["nudged_actions"] != float64(0) {
		t.Fatalf("status-update: %d %s", ended.Status, ended.Body)
	}
	other := d.Post("/v1/vapi/webhook", d.key, "", map[string]any{"message": map[string]any{"type": "transcript", "transcript": "hello"}})
	if other.Status != http.StatusOK {
		t.Fatalf("transcript: %d %s", other.Status, other.Body)
	}
}

// The second promise: a Retell function call and its retry give one
// appointment and identical answers.
func TestRetellRetryIsOneAppointmentWithTheSameAnswer(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	body := voicePayload(t, "retell_function.json", d.bookFill("retell-call-1", d.customer, d.slot))
	first := d.Post("/v1/retell/functions/book_appointment", d.key, "", body)
	retry := d.Post("/v1/retell/functions/book_appointment", d.key, "", body)
	a1, a2 := decodeAnswer(t, first), decodeAnswer(t, retry)
	if a1.Outcome != "confirmed" || a1.ActionID != a2.ActionID || a1.Say != a2.Say || a1.Outcome != a2.Outcome ||
		string(a1.Details) != string(a2.Details) {
		t.Fatalf("first %s, retry %s", first.Body, retry.Body)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE call_platform = 'retell' AND call_id = 'retell-call-1'"); n != 1 {
		t.Fatalf("actions of the call = %d, want 1", n)
	}
}

// An ElevenLabs server tool's body is its arguments plus the dynamic
// variables; a repeat in the same conversation is the same action.
func TestElevenLabsRetryIsOneAppointment(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	body := voicePayload(t, "elevenlabs_tool.json", d.bookFill("conv_1", d.customer, d.slot))
	a1 := decodeAnswer(t, d.Post("/v1/elevenlabs/tools/book_appointment", "", "", body, "X-Oncecall-Key", d.key))
	a2 := decodeAnswer(t, d.Post("/v1/elevenlabs/tools/book_appointment", d.key, "", body))
	if a1.Outcome != "confirmed" || a1.ActionID != a2.ActionID || a2.Outcome != "confirmed" {
		t.Fatalf("first %+v, repeat %+v", a1, a2)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE call_platform = 'elevenlabs' AND call_id = 'conv_1'"); n != 1 {
		t.Fatalf("actions of the conversation = %d, want 1", n)
	}
}

// voicePlatform is how a test sends a booking through one platform and
// reads its answer.
type voicePlatform struct {
	name   string
	path   string
	sample string
	// secret is the platform's own header for the API key, if any.
	secret string
	answer func(t *testing.T, r apptest.Response) answer
}

var voicePlatforms = []voicePlatform{
	{name: "vapi", path: "/v1/vapi/webhook", sample: "vapi_tool_calls.json", secret: "X-Vapi-Secret",
		answer: func(t *testing.T, r apptest.Response) answer {
			t.Helper()
			_, a := vapiResults(t, r)
			if len(a) != 1 {
				t.Fatalf("want one result: %s", r.Body)
			}
			return a[0]
		}},
	{name: "retell", path: "/v1/retell/functions/book_appointment", sample: "retell_function.json", answer: decodeAnswer},
	{name: "elevenlabs", path: "/v1/elevenlabs/tools/book_appointment", sample: "elevenlabs_tool.json", secret: "X-Oncecall-Key", answer: decodeAnswer},
}

// Each platform's adapter keeps the core's promises: concurrent duplicates
// are one action, another caller is never told a taken slot is theirs,
// bad auth and malformed bodies claim nothing, and another tenant's equal
// call id is another call.
func TestVoicePlatformsKeepThePromise(t *testing.T) {
	t.Parallel()
	for _, p := range voicePlatforms {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			d := setupDasha(t)
			fill := d.bookFill(p.name+"-call", d.customer, d.slot)

			// Forged or missing key: 401, nothing claimed (ElevenLabs: a
			// rejected answer, see TestElevenLabsAnswersEveryRefusal).
			if p.name == "elevenlabs" {
				d.Contract.AllowUndocumentedInput() // its refusals are 200
			}
			refused := func(r apptest.Response, status int) bool {
				got, _ := refusalOf(t, p.name, r)
				return got == status
			}
			body := voicePayload(t, p.sample, fill)
			if r := d.Post(p.path, "", "", body); !refused(r, http.StatusUnauthorized) {
				t.Fatalf("no key: %d %s", r.Status, r.Body)
			}
			if r := d.Post(p.path, "forged-"+d.key, "", body); !refused(r, http.StatusUnauthorized) {
				t.Fatalf("forged key: %d %s", r.Status, r.Body)
			}
			if p.secret != "" {
				if r := d.Post(p.path, "", "", body, p.secret, "forged"); !refused(r, http.StatusUnauthorized) {
					t.Fatalf("forged %s: %d %s", p.secret, r.Status, r.Body)
				}
			}
			// Malformed bodies: 400, nothing claimed.
			malformed := []string{"", "[]", "{", body + "}", `{"a": 1, "a": 2}`,
				strings.Replace(body, `"`+fill["CALL"]+`"`, `"bad\u0001id"`, 1)}
			if p.name == "elevenlabs" {
				malformed = append(malformed, `{"system__conversation_id": 5}`)
			} else {
				malformed = append(malformed, `{"message": 3, "call": 3}`)
			}
			for _, bad := range malformed {
				if r := d.Post(p.path, d.key, "", bad); !refused(r, http.StatusBadRequest) {
					t.Errorf("malformed body %.60q: %d %s", bad, r.Status, r.Body)
				}
			}
			if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
				t.Fatalf("refused requests claimed %d actions", n)
			}

			// 10 concurrent duplicates (new invocation ids for Vapi): one action.
			var wg sync.WaitGroup
			answers := make([]answer, 10)
			for i := range answers {
				wg.Go(func() {
					f := map[string]string{}
					for k, v := range fill {
						f[k] = v
					}
					f["TOOLCALL"] = "toolu_" + uuid.NewString()[:8]
					h := []string{}
					if p.secret != "" && i%2 == 1 {
						h = []string{p.secret, d.key}
					}
					key := d.key
					if len(h) > 0 {
						key = ""
					}
					answers[i] = p.answer(t, d.Post(p.path, key, "", voicePayload(t, p.sample, f), h...))
				})
			}
			wg.Wait()
			for i, a := range answers {
				if a.ActionID != answers[0].ActionID || a.Outcome == "rejected" {
					t.Fatalf("duplicate %d: %+v, first %+v", i, a, answers[0])
				}
			}
			if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
				t.Fatalf("appointments = %d, want 1", n)
			}
			if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
				t.Fatalf("actions = %d, want 1", n)
			}

			// Another call, another customer, the taken slot: not booked.
			other := d.Customer(d.tenant)
			a := p.answer(t, d.Post(p.path, d.key, "", voicePayload(t, p.sample, d.bookFill(p.name+"-other", other, d.slot))))
			if a.Outcome == "confirmed" {
				t.Fatalf("another caller was told the taken slot is booked: %+v", a)
			}
			if n := d.Count("SELECT count(*) FROM appointments WHERE customer_id = $1", other); n != 0 {
				t.Fatalf("the other caller got %d appointments", n)
			}

			// Another tenant with the same call id books its own slot: its
			// own action, the first tenant's untouched.
			t2, key2 := d.Tenant("other-" + p.name)
			c2, s2 := d.Customer(t2.ID), d.Slot(t2.ID, 2)
			b := p.answer(t, d.Post(p.path, key2, "", voicePayload(t, p.sample, d.bookFill(p.name+"-call", c2, s2))))
			if b.Outcome != "confirmed" || b.ActionID == answers[0].ActionID {
				t.Fatalf("another tenant's equal call id: %+v", b)
			}
			if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", t2.ID); n != 1 {
				t.Fatalf("the other tenant's appointments = %d, want 1", n)
			}
		})
	}
}

// Equal call ids of two platforms are two calls: a per-call operation
// (create_customer without a phone) is not answered for the other's action.
func TestVoicePlatformCallIDsAreKeptApart(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	args := map[string]any{"name": "Dana Example", "external_ref": "crm-42"}
	viaDasha := decodeAnswer(t, d.call("create_customer", "shared-call-id", args))
	_, viaVapi := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", map[string]any{"message": map[string]any{
		"type": "tool-calls", "call": map[string]any{"id": "shared-call-id"},
		"toolCallList": []any{map[string]any{"id": "t1", "name": "create_customer", "arguments": args}},
	}}))
	if viaDasha.ActionID == "" || viaDasha.ActionID == viaVapi[0].ActionID {
		t.Fatalf("dasha %+v, vapi %+v: one action for two platforms' calls", viaDasha, viaVapi[0])
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE call_id = 'shared-call-id' AND call_platform IN ('dasha', 'vapi')"); n != 2 {
		t.Fatalf("actions = %d, want 2", n)
	}
}

// A slow provider: every platform's tool call answers pending within the
// budget, and the calendar sees one write.
func TestVoicePlatformsAnswerPendingWithinTheBudget(t *testing.T) {
	t.Parallel()
	for _, p := range voicePlatforms {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			sim, providers := slowCalendar(t, "4s")
			d := setupDasha(t, func(c *app.Config) {
				c.Providers = providers
				c.ReconcileDisabled = true
				c.DashaBudget = 2 * time.Second
			})
			start := time.Now()
			r := within(t, d.Env, 4*time.Second, http.MethodPost, p.path, d.key,
				voicePayload(t, p.sample, d.bookFill(p.name+"-slow", d.customer, d.slot)))
			a := p.answer(t, r)
			if a.Outcome != "pending" || a.ActionID == "" {
				t.Fatalf("a slow provider after %v: %s", time.Since(start), r.Body)
			}
			assertPendingWording(t, a)
			deadline := time.Now().Add(30 * time.Second)
			for len(sim.Ledger(provider.Calendar)) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the calendar never saw the write")
				}
				time.Sleep(50 * time.Millisecond) // polling a condition
			}
			if l := sim.Ledger(provider.Calendar); len(l) != 1 {
				t.Fatalf("calendar ledger holds %d writes, want 1", len(l))
			}
		})
	}
}

// A Vapi call's end (end-of-call-report) makes the open steps of the
// actions it claimed due now, like Dasha's call events; a Dasha event for
// the same bare call id is another platform's call and nudges nothing.
func TestVapiCallEndNudgesItsUnfinishedActions(t *testing.T) {
	t.Parallel()
	d, sim := remoteDasha(t)
	sim.Fault(provider.Messaging, "drop_response", 1)
	sms := map[string]any{"to": "+442079460117", "channel": "sms", "template": "generic", "variables": map[string]any{"body": "Hi"}}
	_, a := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", map[string]any{"message": map[string]any{
		"type": "tool-calls", "call": map[string]any{"id": "call_ev"},
		"toolCallList": []any{map[string]any{"id": "t1", "name": "send_message", "arguments": sms}},
	}}))
	if a[0].Outcome != "pending" {
		t.Fatalf("lost answer: %+v", a[0])
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE id = $1 AND call_platform = 'vapi' AND call_id = 'call_ev' AND state = 'unknown'", a[0].ActionID); n != 1 {
		t.Fatalf("the action does not carry its platform's call id")
	}
	due := func() int {
		return d.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND state IN ('pending', 'unknown') AND next_check_at <= now()", a[0].ActionID)
	}
	dasha := d.Post("/v1/dasha/events", d.key, "", map[string]any{"type": "CompletedWebHookPayload", "callId": "call_ev", "orgId": testOrg})
	if dasha.Status != http.StatusOK || dasha.JSON(t)["nudged_actions"] != float64(0) || due() != 0 {
		t.Fatalf("a Dasha event for the bare call id: %d %s", dasha.Status, dasha.Body)
	}
	r := d.Post("/v1/vapi/webhook", d.key, "", map[string]any{"message": map[string]any{
		"type": "end-of-call-report", "endedReason": "customer-ended-call", "call": map[string]any{"id": "call_ev"},
	}})
	if r.Status != http.StatusOK || r.JSON(t)["nudged_actions"] != float64(1) || due() != 1 {
		t.Fatalf("end-of-call-report: %d %s, due %d", r.Status, r.Body, due())
	}
	if n := d.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'nudged' AND detail->>'by' = 'vapi_call_ended'", a[0].ActionID); n != 1 {
		t.Fatalf("nudged events = %d", n)
	}
}

// An Idempotency-Key header on a Vapi message does not make its tool calls
// one action: two bookings in one message (of two customers: one customer's
// second is refused, TestSecondBookingInOneCallIsRefused) are two
// appointments.
func TestVapiIgnoresIdempotencyKeyAcrossToolCalls(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	second := d.Slot(d.tenant, 2)
	_, a := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "one-key", map[string]any{"message": map[string]any{
		"type": "tool-calls", "call": map[string]any{"id": "vapi-call-4"},
		"toolCallList": []any{
			map[string]any{"id": "t1", "name": "book_appointment", "arguments": d.bookArgs(d.slot)},
			map[string]any{"id": "t2", "name": "book_appointment", "arguments": d.bookArgsFor(d.Customer(d.tenant), second)},
		},
	}}))
	if len(a) != 2 || a[0].Outcome != "confirmed" || a[1].Outcome != "confirmed" || a[0].ActionID == a[1].ActionID {
		t.Fatalf("two bookings under one Idempotency-Key: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 2 {
		t.Fatalf("appointments = %d, want 2", n)
	}
}
