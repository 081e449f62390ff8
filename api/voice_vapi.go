package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
)

// vapiEnvelope is a Vapi server message: {"message": {...}}. Fields not
// listed are tolerated (Vapi sends many).
type vapiEnvelope struct {
	Message json.RawMessage `json:"message"`
}

type vapiMessage struct {
	Type         string          `json:"type"`
	Status       string          `json:"status"`
	ToolCallList json.RawMessage `json:"toolCallList"`
	Call         json.RawMessage `json:"call"`
	Customer     json.RawMessage `json:"customer"`
}

type vapiCall struct {
	ID       string          `json:"id"`
	Customer json.RawMessage `json:"customer"`
	// Monitor holds the call's controlUrl (Live Call Control), where a
	// late result is delivered (voice_late.go).
	Monitor *struct {
		ControlURL string `json:"controlUrl"`
	} `json:"monitor"`
}

type vapiCustomer struct {
	Number string `json:"number"`
}

// vapiToolCall is one entry of toolCallList, in either shape Vapi sends:
// {id, name, arguments} or {id, function: {name, arguments}}.
type vapiToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Function  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// vapiResult is one entry of the answer's results, for the tool call with
// the same toolCallId. Result is the oncecall answer as one line of JSON
// (outcome, action_id, say, details): the model acts on it and speaks only
// what say allows. Error is set instead for a tool oncecall does not have.
type vapiResult struct {
	ToolCallID string `json:"toolCallId"`
	Result     string `json:"result,omitempty"`
	Error      string `json:"error,omitempty"`
}

type vapiAnswer struct {
	Results []vapiResult `json:"results"`
}

// The Vapi messages that end a call, and the timeline event each leaves on
// the call's unfinished actions.
const vapiCallEnded = "vapi_call_ended"

// vapiWebhook answers POST /v1/vapi/webhook, an assistant's server URL. A
// tool-calls message is answered with one result per tool call, in order;
// the call's identity is Vapi's call.id, never the toolCall id (a model that
// calls a tool again gets a new one, and is answered for the same action).
// A call's end (status-update "ended", end-of-call-report) nudges its
// unfinished actions like /v1/dasha/events; every other message is
// acknowledged with 200 {}. A malformed message is 400 and claims nothing.
func (s *Server) vapiWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readRaw(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var env vapiEnvelope
	if err := decodeWebhook(body, &env, "a Vapi server message"); err != nil {
		writeError(w, r, err)
		return
	}
	var m vapiMessage
	if err := decodePart(env.Message, &m, "message", "must be a Vapi server message object"); err != nil {
		writeError(w, r, err)
		return
	}
	callID, caller, control, err := vapiCallOf(m)
	if err != nil {
		writeError(w, r, err)
		return
	}
	tenant := tenantFrom(r.Context())
	switch {
	case m.Type == "tool-calls":
	case m.Type == "end-of-call-report" || (m.Type == "status-update" && m.Status == "ended"):
		s.voiceCallEnded(w, r, tenant, voiceCall{Platform: platformVapi, CallID: callID}, vapiCallEnded)
		return
	default:
		writeJSON(w, http.StatusOK, struct{}{})
		return
	}
	calls, err := vapiToolCalls(m.ToolCallList)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// One message may carry several tool calls: a single Idempotency-Key
	// cannot name each one's action, so the identity rules alone apply.
	r.Header.Del("Idempotency-Key")
	ans := vapiAnswer{Results: make([]vapiResult, 0, len(calls))}
	controlURL := ""
	if callID != "" {
		controlURL = s.lateControlURL(control)
	}
	for _, tc := range calls {
		c := voiceCall{Platform: platformVapi, CallID: callID, Tool: tc.Name, Arguments: tc.Arguments, Caller: caller, ToolCallID: tc.ID}
		a, err := s.answerTool(r, tenant, c)
		if fault.CodeOf(err) == fault.NotFound {
			ans.Results = append(ans.Results, vapiResult{ToolCallID: tc.ID, Error: fault.As(err).Message})
			continue
		}
		if fault.CodeOf(err) == fault.InvalidInput {
			// A call id the operation needs is missing: nothing claimed,
			// and the model hears what is missing.
			a, err = invalid(err)
		}
		if err != nil {
			// Nothing was claimed for this tool call: the model hears the
			// fallback, which never claims success, and may call again.
			a = fallbackFor(tc.Name)
			logFrom(r.Context()).Error().Err(err).Str("tool", tc.Name).Msg("tool call failed; answered with its fallback")
		}
		line, err := json.Marshal(a)
		if err != nil {
			writeError(w, r, err)
			return
		}
		s.deliverLate(r.Context(), tenant, c, controlURL, a)
		ans.Results = append(ans.Results, vapiResult{ToolCallID: tc.ID, Result: string(line)})
	}
	writeJSON(w, http.StatusOK, ans)
}

// vapiCallOf reads the call id, the caller's number and the control URL
// of a message.
func vapiCallOf(m vapiMessage) (string, func() (string, bool), string, error) {
	var c vapiCall
	if len(m.Call) > 0 && string(m.Call) != "null" {
		if err := decodePart(m.Call, &c, "message.call", "must be an object with the call's id"); err != nil {
			return "", nil, "", err
		}
	}
	if err := checkCallID(c.ID, "message.call.id"); err != nil {
		return "", nil, "", err
	}
	control := ""
	if c.Monitor != nil {
		control = c.Monitor.ControlURL
	}
	customer, at := c.Customer, "message.call.customer."
	if len(customer) == 0 || string(customer) == "null" {
		customer, at = m.Customer, "message.customer."
	}
	// The number is read only if a tool needs it, but its name is checked
	// now: a message is refused whole or not at all.
	if len(customer) > 0 {
		if err := op.CheckFieldNamesAt(customer, &vapiCustomer{}, at); err != nil {
			return "", nil, "", err
		}
	}
	caller := func() (string, bool) {
		var cu vapiCustomer
		if len(customer) == 0 || json.Unmarshal(customer, &cu) != nil || cu.Number == "" {
			return "", false
		}
		n, err := json.Marshal(cu.Number)
		if err != nil {
			return "", false
		}
		return dashatool.CallerNumber(n)
	}
	return c.ID, caller, control, nil
}

// vapiToolCalls decodes toolCallList; every entry needs an id and a tool
// name. Arguments are checked per call (bad ones are invalid_arguments).
func vapiToolCalls(raw json.RawMessage) ([]vapiToolCall, error) {
	var list []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, fault.Field("message.toolCallList", "must be a non-empty array of tool calls")
	}
	if len(list) > 16 {
		return nil, fault.Field("message.toolCallList", "holds more than 16 tool calls")
	}
	calls := make([]vapiToolCall, len(list))
	for i, e := range list {
		var tc vapiToolCall
		if err := decodePart(e, &tc, "message.toolCallList", fmt.Sprintf("entry %d is not a tool call object", i)); err != nil {
			return nil, err
		}
		if tc.Function != nil {
			tc.Name = cmp.Or(tc.Name, tc.Function.Name)
			if len(tc.Arguments) == 0 {
				tc.Arguments = tc.Function.Arguments
			}
		}
		if tc.ID == "" || len(tc.ID) > 200 || idem.ValidateKey(tc.ID) != nil {
			return nil, fault.Field("message.toolCallList", "entry %d needs an id of at most 200 printable ASCII characters", i)
		}
		if !toolNamePattern.MatchString(tc.Name) || len(tc.Name) > 64 {
			return nil, fault.Field("message.toolCallList", "entry %d needs a tool name such as book_appointment", i)
		}
		calls[i] = tc
	}
	return calls, nil
}

// checkCallID checks a platform's call id: optional, but when given at most
// 200 printable ASCII characters.
func checkCallID(id, field string) error {
	if id != "" && (len(id) > 200 || idem.ValidateKey(id) != nil || strings.TrimSpace(id) != id) {
		return fault.Field(field, "must be at most 200 printable ASCII characters")
	}
	return nil
}

// fallbackFor is the answer given for a tool call that failed with nothing
// claimed: the tool definition's fallback, which never claims success.
func fallbackFor(tool string) dashatool.Answer {
	if dashatool.ReadOnly(tool) {
		return dashatool.ReadFallback()
	}
	return dashatool.Fallback()
}

// voiceCallEnded nudges the unfinished actions of a call that has ended so
// the reconciler settles them at its next pass, ends the call's
// subscriptions to late results, and answers 200.
func (s *Server) voiceCallEnded(w http.ResponseWriter, r *http.Request, tenant oncecall.Tenant, c voiceCall, event string) {
	if c.CallID == "" {
		writeJSON(w, http.StatusOK, dashaEventAnswer{})
		return
	}
	info := infoFrom(r.Context())
	info.callPlatform, info.callID = c.Platform, c.CallID
	// No late result is delivered to an ended call.
	if err := s.cfg.Store.EndLateResults(r.Context(), tenant.ID, c.Platform, c.CallID); err != nil {
		writeError(w, r, dashaError(db.Fault(err)))
		return
	}
	n, err := s.cfg.Store.NudgeCall(r.Context(), tenant.ID, c.Platform, c.CallID, event)
	if err != nil {
		writeError(w, r, dashaError(db.Fault(err)))
		return
	}
	writeJSON(w, http.StatusOK, dashaEventAnswer{NudgedActions: n})
}
