package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// answerRefusals is the middleware of a platform that hides a webhook
// tool's HTTP errors from its agent (ElevenLabs, unless the tool passes
// errors through): every problem+json its routes would send, from a
// malformed body to a refused key or a failure, is sent instead as HTTP 200
// with an answer the agent acts on (outcome, reason, say, details naming the
// error's code), so that the agent always learns that nothing was done. The
// refusal itself is unchanged: nothing is claimed. Only 4xx and 5xx are
// rewritten; the REST API and the other platforms keep their statuses.
func answerRefusals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &refusalWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if rw.status < 400 {
			return
		}
		var p Problem
		if json.Unmarshal(rw.body.Bytes(), &p) != nil || p.Code == "" {
			p = Problem{Status: rw.status, Code: string(fault.Internal), Detail: http.StatusText(rw.status)}
		}
		p.Status = rw.status
		ans := refusalAnswer(p)
		infoFrom(r.Context()).outcome = ans.Outcome
		w.Header().Del("Content-Length")
		writeJSON(w, http.StatusOK, ans)
	})
}

// refusalWriter holds back a 4xx or 5xx answer for answerRefusals; any
// other passes through.
type refusalWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *refusalWriter) WriteHeader(code int) {
	if code >= 400 {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.status >= 400 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refusalAnswer is the answer a refused tool call gets in place of the
// problem p: rejected (nothing was done) for a refusal, pending without an
// action for a failure or a busy server (nothing was stored; the same call
// again is safe), pending with the action for an attempt still running.
func refusalAnswer(p Problem) dashatool.Answer {
	var ans dashatool.Answer
	code := fault.Code(p.Code)
	switch {
	case code == fault.InProgress || code == fault.InFlight:
		id, _ := uuid.Parse(p.ActionID)
		ans = dashatool.InProgress(id, op.Phrases{})
	case p.Status >= 500 || code == fault.RateLimited:
		ans = dashatool.Fallback()
	case code == fault.InvalidJSON || code == fault.InvalidInput:
		ans = dashatool.Invalid(p.Field, p.Detail)
	case code == fault.NotFound:
		ans = refused("unknown_tool", fmt.Sprintf("Nothing was done: %s. Use only the tools you were given, with their names exactly as given.", p.Detail))
	case code == fault.Unauthorized || code == fault.Forbidden:
		ans = refused(strings.ToLower(p.Code), fmt.Sprintf("Nothing was done: oncecall refused this tool's credentials (%s), so none of its tools can work in this call. "+
			"Do not tell the caller anything happened; tell them you cannot do it right now.", p.Detail))
	default:
		ans = refused(strings.ToLower(p.Code), fmt.Sprintf("Nothing was done: %s. Do not tell the caller it happened.", p.Detail))
	}
	details := map[string]any{"code": p.Code, "http_status": p.Status, "message": p.Detail}
	if p.Field != "" {
		details["field"] = p.Field
	}
	ans.Details, _ = json.Marshal(details)
	return ans
}

func refused(reason, say string) dashatool.Answer {
	return dashatool.Answer{Outcome: string(oncecall.Rejected), Reason: reason, Say: say, Details: json.RawMessage("{}")}
}
