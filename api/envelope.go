package api

import (
	"encoding/json"
	"net/http"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/wire"
)

// Envelope is the answer to every write and to GET /v1/actions/{id}.
type Envelope = wire.Envelope

func statusURL(id string) string { return wire.StatusURL(id) }

func envelope(a oncecall.Action) Envelope { return wire.FromAction(a) }

// writeAction answers with an action as the REST contract says: the stored
// status and envelope when confirmed, 422 problem+json when rejected, 202
// pending otherwise. The answer is a function of the stored action only, so a
// replay is byte-identical to the first answer.
func writeAction(w http.ResponseWriter, a oncecall.Action, replayed bool) {
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", statusURL(a.ID.String()))
	switch {
	case a.State != oncecall.Completed:
		writeEnvelope(w, http.StatusAccepted, a)
	case a.Outcome == oncecall.Rejected:
		writeProblem(w, Problem{
			Status: http.StatusUnprocessableEntity, Code: a.Reason, Detail: "the action was rejected: " + a.Reason,
			ActionID: a.ID.String(), Outcome: string(a.Outcome), State: string(a.State),
			StatusURL: statusURL(a.ID.String()), Details: a.Result,
		})
	default:
		status := a.Status
		if status == 0 {
			status = http.StatusOK
		}
		writeEnvelope(w, status, a)
	}
}

// writeEnvelope writes envelope(a) as writeJSON would, without encoding/json:
// the stored result is copied as it is instead of being parsed and compacted
// again on every replay.
func writeEnvelope(w http.ResponseWriter, status int, a oncecall.Action) {
	id := a.ID.String()
	body := make([]byte, 0, 160+len(a.Result))
	body = append(body, `{"action_id":`...)
	body = appendJSONString(body, id)
	body = append(body, `,"operation":`...)
	body = appendJSONString(body, a.Operation)
	body = append(body, `,"outcome":`...)
	body = appendJSONString(body, wire.OutcomeOf(a))
	body = append(body, `,"state":`...)
	body = appendJSONString(body, string(a.State))
	body = append(body, `,"result":`...)
	body, err := appendRawJSON(body, wire.ResultOf(a))
	if err != nil {
		http.Error(w, "encode response", http.StatusInternalServerError)
		return
	}
	body = append(body, `,"reason":`...)
	if a.Reason != "" {
		body = appendJSONString(body, a.Reason)
	} else {
		body = append(body, "null"...)
	}
	body = append(body, `,"status_url":`...)
	body = appendJSONString(body, statusURL(id))
	body = append(body, '}')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck
}

// appendJSONString appends s as encoding/json encodes a string. The names,
// states and ids of an envelope need no escaping; anything else is left to
// encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string: cannot fail
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendRawJSON appends raw as encoding/json writes a json.RawMessage:
// compacted, with <, >, &, U+2028 and U+2029 escaped. Stored results are
// written by encoding/json (op.Confirm, op.Reject), so they are already in
// that form and are copied unchanged; anything else goes through
// encoding/json, which also rejects what is not JSON.
func appendRawJSON(dst, raw []byte) ([]byte, error) {
	if len(raw) > 0 && marshalledForm(raw) {
		return append(dst, raw...), nil
	}
	b, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// marshalledForm reports whether encoding/json would write the JSON text raw
// unchanged: no whitespace outside strings, and none of the characters it
// escapes for HTML safety. It does not validate raw.
func marshalledForm(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c > '>' && c != '\\' && c != 0xE2 {
			continue // letters and most of UTF-8: the common case
		}
		switch c {
		case '<', '>', '&':
			return false
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				return false
			}
		case '"':
			inString = !inString
		case '\\':
			i++ // only inside a string; the escaped character cannot end it
		case ' ', '\t', '\n', '\r':
			if !inString {
				return false
			}
		}
	}
	return true
}
