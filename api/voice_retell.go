package api

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
)

// retellPayload is a Retell custom function call: the function's name, the
// call object and the arguments. Fields not listed are tolerated.
type retellPayload struct {
	Name string          `json:"name"`
	Call json.RawMessage `json:"call"`
	Args json.RawMessage `json:"args"`
}

type retellCall struct {
	CallID     string `json:"call_id"`
	FromNumber string `json:"from_number"`
}

// retellFunction answers POST /v1/retell/functions/{tool}, a Retell custom
// function's URL. The identity is the call's call_id; Retell's retry of a
// function carries the same call and arguments, so it is answered for the
// same action with the same answer. The answer is the oncecall answer as
// JSON (HTTP 200), which Retell hands to the model.
func (s *Server) retellFunction(w http.ResponseWriter, r *http.Request) {
	body, err := readRaw(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.checkRetellSignature(w, r, tenantFrom(r.Context()), body); err != nil {
		writeError(w, r, err)
		return
	}
	var p retellPayload
	if err := decodeWebhook(body, &p, "a Retell function call"); err != nil {
		writeError(w, r, err)
		return
	}
	tool := chi.URLParam(r, "tool")
	switch {
	case p.Name != "" && p.Name != tool:
		writeError(w, r, fault.Field("name", "does not match the tool in the URL"))
		return
	case !toolNamePattern.MatchString(tool) || len(tool) > 64:
		writeError(w, r, fault.Field("name", "must be a tool name such as book_appointment"))
		return
	}
	var c retellCall
	if err := decodePart(p.Call, &c, "call", "must be the Retell call object"); err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkCallID(c.CallID, "call.call_id"); err != nil {
		writeError(w, r, err)
		return
	}
	s.answerVoice(w, r, voiceCall{
		Platform: platformRetell, CallID: c.CallID, Tool: tool, Arguments: p.Args,
		Caller: phoneOf(c.FromNumber),
	})
}

// answerVoice answers one tool call with the oncecall answer as JSON (HTTP
// 200), as Dasha, Retell and ElevenLabs take it; an unknown tool is 404 and
// a failure 503, both with nothing claimed.
func (s *Server) answerVoice(w http.ResponseWriter, r *http.Request, c voiceCall) {
	ans, err := s.answerTool(r, tenantFrom(r.Context()), c)
	s.writeVoice(w, r, ans, err)
}

// writeVoice writes a tool call's answer, or its error as the route
// answers errors.
func (s *Server) writeVoice(w http.ResponseWriter, r *http.Request, ans dashatool.Answer, err error) {
	info := infoFrom(r.Context())
	if err != nil {
		writeError(w, r, dashaError(err))
		return
	}
	info.outcome = ans.Outcome
	if info.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, ans)
}

// phoneOf returns a Caller for a number a platform sends as a string.
func phoneOf(number string) func() (string, bool) {
	return func() (string, bool) {
		if number == "" {
			return "", false
		}
		n, err := json.Marshal(number)
		if err != nil {
			return "", false
		}
		return dashatool.CallerNumber(n)
	}
}
