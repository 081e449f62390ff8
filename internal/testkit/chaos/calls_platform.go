package chaos

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// How each platform delivers a tool call and what it does when no answer
// comes: its timeout, how often it sends the same request again (on a 5xx,
// a timeout or a cut connection), and whether the model then gets a
// fallback answer (Dasha's fallBackResult, a pending outcome) or is told
// the tool failed.
type platformPolicy struct {
	Timeout  time.Duration
	Retries  int
	Fallback bool
}

var policies = map[string]platformPolicy{
	platDasha:      {Timeout: 10 * time.Second, Retries: 2, Fallback: true}, // timeoutSeconds 10, retryCount 2
	platVapi:       {Timeout: 20 * time.Second},                             // timeoutSeconds 20; a tool request is not retried
	platRetell:     {Timeout: 10 * time.Second, Retries: 2},                 // timeout_ms 10000, "retried up to 2 times"
	platElevenLabs: {Timeout: 20 * time.Second},                             // response_timeout_secs 20
}

// toolCall is one invocation of a tool by the model.
type toolCall struct {
	// ID is the platform's id of this invocation (Vapi's toolCall id): a
	// new one each time the model calls a tool.
	ID   string
	Tool string
	// Args are the arguments as the model wrote them (a JSON object).
	Args []byte
	// AsString sends them as a JSON string holding the object, as some
	// platforms and models do.
	AsString bool
	// Flat is Vapi's other toolCallList shape: {id, name, arguments}.
	Flat bool
}

// voiceAnswer is oncecall's answer to one tool call, as every platform
// carries it.
type voiceAnswer struct {
	Outcome  string          `json:"outcome"`
	ActionID string          `json:"action_id"`
	Reason   string          `json:"reason"`
	Say      string          `json:"say"`
	Details  json.RawMessage `json:"details"`
	Current  string          `json:"current"`
}

// delivery is one HTTP request a platform sends for one or more tool calls
// of a call.
type delivery struct {
	Path   string
	Header http.Header
	Body   []byte
}

// clone copies d (its header is changed per delivery: Retell signs each).
func (d delivery) clone() delivery {
	d.Header = d.Header.Clone()
	return d
}

// deliver builds the request platform sends for calls (Vapi may carry
// several tool calls in one message; the other platforms one).
func (c *callScript) deliver(calls []toolCall, rng *rand.Rand) (delivery, error) {
	t := c.Tenant
	h := http.Header{"Content-Type": {"application/json"}}
	tc := calls[0]
	args := json.RawMessage(tc.Args)
	if tc.AsString {
		s, _ := json.Marshal(string(tc.Args)) // a string: cannot fail
		args = s
	}
	switch c.Platform {
	case platDasha:
		body := ordered{
			{"type", "ToolWebHookPayload"}, {"status", "Running"}, {"callId", c.CallID}, {"agentId", "agent_chaos"},
			{"orgId", t.Org}, {"toolName", tc.Tool}, {"arguments", args},
			{"callAdditionalData", ordered{}}, {"agentAdditionalData", ordered{}},
			{"endpoint", "tel:" + c.Person.Phone}, {"serverJobId", "job_" + strconv.Itoa(c.N)},
		}
		h.Set("Authorization", "Bearer "+t.Key)
		return delivery{Path: "/v1/dasha/tools/" + tc.Tool, Header: h, Body: body.shuffled(rng)}, nil
	case platVapi:
		list := make([]any, len(calls))
		for i, tc := range calls {
			args := json.RawMessage(tc.Args)
			if tc.AsString || tc.Flat {
				s, _ := json.Marshal(string(tc.Args)) // a string: cannot fail
				args = s
			}
			if tc.Flat {
				list[i] = ordered{{"id", tc.ID}, {"name", tc.Tool}, {"arguments", args}}
			} else {
				list[i] = ordered{{"id", tc.ID}, {"type", "function"}, {"function", ordered{{"name", tc.Tool}, {"arguments", args}}}}
			}
		}
		msg := ordered{
			{"timestamp", time.Now().UnixMilli()}, {"type", "tool-calls"}, {"toolCallList", list},
			{"toolWithToolCallList", []any{}}, {"artifact", ordered{{"messages", []any{}}}},
			{"call", ordered{{"id", c.CallID}, {"orgId", t.Org}, {"type", "inboundPhoneCall"}, {"customer", ordered{{"number", c.Person.Phone}}}}},
			{"assistant", ordered{{"name", "Front desk"}}}, {"phoneNumber", ordered{{"number", "+14155550199"}}},
		}
		if rng.IntN(3) == 0 {
			h.Set("Authorization", "Bearer "+t.Key)
		} else {
			h.Set("X-Vapi-Secret", t.Key)
		}
		return delivery{Path: "/v1/vapi/webhook", Header: h, Body: ordered{{"message", msg}}.shuffled(rng)}, nil
	case platRetell:
		body := ordered{
			{"name", tc.Tool},
			{"call", ordered{
				{"call_type", "phone_call"}, {"call_id", c.CallID}, {"agent_id", "agent_chaos"}, {"call_status", "ongoing"},
				{"from_number", c.Person.Phone}, {"to_number", "+14155550199"}, {"direction", "inbound"},
				{"start_timestamp", time.Now().Add(-time.Minute).UnixMilli()},
			}},
			{"args", args},
		}.shuffled(rng)
		h.Set("Authorization", "Bearer "+t.Key)
		h.Set("X-Retell-Signature", retellSignature(body, t.RetellKey, time.Now()))
		return delivery{Path: "/v1/retell/functions/" + tc.Tool, Header: h, Body: body}, nil
	case platElevenLabs:
		var fields ordered
		if err := json.Unmarshal(tc.Args, &fields); err != nil {
			return delivery{}, fmt.Errorf("arguments of %s: %w", tc.Tool, err)
		}
		fields = append(fields, kv{"system__conversation_id", c.CallID}, kv{"system__caller_id", c.Person.Phone},
			kv{"system__agent_id", "agent_chaos"})
		if rng.IntN(3) == 0 {
			h.Set("Authorization", "Bearer "+t.Key)
		} else {
			h.Set("X-Oncecall-Key", t.Key)
		}
		return delivery{Path: "/v1/elevenlabs/tools/" + tc.Tool, Header: h, Body: fields.shuffled(rng)}, nil
	}
	return delivery{}, fmt.Errorf("unknown platform %q", c.Platform)
}

// retellSignature signs a body as Retell does: v=<unix ms>,d=<hex
// HMAC-SHA256 of the body followed by that timestamp, keyed with the
// Retell API key>.
func retellSignature(body []byte, key string, at time.Time) string {
	ts := strconv.FormatInt(at.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	mac.Write([]byte(ts))
	return "v=" + ts + ",d=" + hex.EncodeToString(mac.Sum(nil))
}

// decodeAnswers reads a 200 answer: one oncecall answer per tool call.
// Vapi's is {"results": [{"toolCallId", "result"}]} with each result the
// answer as one line of JSON, in the order of the calls; the others' is
// the answer itself.
func decodeAnswers(platform string, body []byte, calls []toolCall) ([]*voiceAnswer, error) {
	if platform != platVapi {
		a, err := decodeAnswer(body)
		return []*voiceAnswer{a}, err
	}
	var v struct {
		Results []struct {
			ToolCallID string `json:"toolCallId"`
			Result     string `json:"result"`
			Error      string `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("not a Vapi answer: %w", err)
	}
	if len(v.Results) != len(calls) {
		return nil, fmt.Errorf("%d results for %d tool calls", len(v.Results), len(calls))
	}
	out := make([]*voiceAnswer, len(calls))
	for i, r := range v.Results {
		switch {
		case r.ToolCallID != calls[i].ID:
			return nil, fmt.Errorf("result %d answers tool call %q, not %q", i, r.ToolCallID, calls[i].ID)
		case r.Error != "":
			return nil, fmt.Errorf("result %d is an error: %s", i, r.Error)
		case strings.Contains(r.Result, "\n"):
			return nil, fmt.Errorf("result %d is not one line", i)
		}
		a, err := decodeAnswer([]byte(r.Result))
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

func decodeAnswer(b []byte) (*voiceAnswer, error) {
	var a voiceAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("not an oncecall answer: %w", err)
	}
	switch a.Outcome {
	case "confirmed", "rejected", "pending":
	default:
		return nil, fmt.Errorf("outcome %q", a.Outcome)
	}
	return &a, nil
}

// fallbackAnswer is what Dasha hands the model when a tool's webhook
// failed: the tool definition's fallBackResult, a pending outcome without
// an action id.
func fallbackAnswer() *voiceAnswer {
	return &voiceAnswer{
		Outcome: "pending", Reason: "no_answer", Details: json.RawMessage("{}"),
		Say: "oncecall did not answer, so this request is NOT confirmed and its result is unknown. Do not tell the caller that it happened.",
	}
}

// kv is one member of an ordered JSON object.
type kv struct {
	K string
	V any
}

// ordered is a JSON object whose members keep their order (a model writes
// them in any order): it marshals in order and unmarshals keeping it.
type ordered []kv

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.K)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.V)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *ordered) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	*o = nil
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*o = append(*o, kv{K: t.(string), V: v})
	}
	return nil
}

// shuffled marshals o with its top-level members in a random order.
func (o ordered) shuffled(rng *rand.Rand) []byte {
	c := append(ordered(nil), o...)
	rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	b, _ := json.Marshal(c) // strings, numbers and objects of them: cannot fail
	return b
}

// get returns the value of key, or nil.
func (o ordered) get(key string) any {
	for _, m := range o {
		if m.K == key {
			return m.V
		}
	}
	return nil
}

// str returns the value of key when it is a string (as written, or as
// decoded JSON), else "".
func (o ordered) str(key string) string {
	switch v := o.get(key).(type) {
	case string:
		return v
	case json.RawMessage:
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	return ""
}
