package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
)

// ElevenLabs dynamic variables a server tool's body carries: the
// conversation id (the call's identity) and the caller's number.
const (
	elevenConversationID = "system__conversation_id"
	elevenCallerID       = "system__caller_id"
)

// elevenLabsTool answers POST /v1/elevenlabs/tools/{tool}, an ElevenLabs
// server tool's URL. The body is the tool's request_body_schema: its
// arguments, plus the dynamic variables system__conversation_id (the
// identity) and system__caller_id, which are taken out of the arguments;
// any other system__ variable is ignored.
func (s *Server) elevenLabsTool(w http.ResponseWriter, r *http.Request) {
	if c, ok := s.elevenLabsCall(w, r); ok {
		s.answerVoice(w, r, c)
	}
}

// elevenLabsCall reads an ElevenLabs server tool's call; when it cannot,
// the refusal is written and ok is false.
func (s *Server) elevenLabsCall(w http.ResponseWriter, r *http.Request) (voiceCall, bool) {
	body, err := readRaw(r)
	if err != nil {
		writeError(w, r, err)
		return voiceCall{}, false
	}
	var args map[string]json.RawMessage
	raw, err := canonicalWebhook(body, &args, "an ElevenLabs server tool body")
	if err != nil {
		writeError(w, r, err)
		return voiceCall{}, false
	}
	tool := chi.URLParam(r, "tool")
	if !toolNamePattern.MatchString(tool) || len(tool) > 64 {
		writeError(w, r, fault.New(fault.NotFound, "no tool named %s", tool))
		return voiceCall{}, false
	}
	var conv, caller string
	for k, v := range args {
		if !strings.HasPrefix(k, "system__") {
			continue
		}
		_, raw, _ = canon.Cut(raw, k) // the arguments stay canonical
		var dst *string
		switch k {
		case elevenConversationID:
			dst = &conv
		case elevenCallerID:
			dst = &caller
		default:
			continue
		}
		if string(v) != "null" && json.Unmarshal(v, dst) != nil {
			writeError(w, r, fault.Field(k, "must be a string"))
			return voiceCall{}, false
		}
	}
	if err := checkCallID(conv, elevenConversationID); err != nil {
		writeError(w, r, err)
		return voiceCall{}, false
	}
	return voiceCall{Platform: platformElevenLabs, CallID: conv, Tool: tool, Arguments: raw, Caller: phoneOf(caller)}, true
}
