// Package api is oncecall's HTTP surface: the chi router, middleware, the
// REST and Dasha handlers, and problem+json errors.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
)

// Problem is an RFC 9457 problem document with oncecall's extension members.
type Problem struct {
	Type      string          `json:"type"`
	Title     string          `json:"title"`
	Status    int             `json:"status"`
	Detail    string          `json:"detail,omitempty"`
	Code      string          `json:"code"`
	Field     string          `json:"field,omitempty"`
	ActionID  string          `json:"action_id,omitempty"`
	Outcome   string          `json:"outcome,omitempty"`
	State     string          `json:"state,omitempty"`
	StatusURL string          `json:"status_url,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// writeError answers err as problem+json. Only 5xx are logged as errors, and
// internal text never reaches the client.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away; nobody to answer
	}
	p := Problem{}
	var retry time.Duration
	var inProgress *idem.InProgressError
	var reused *idem.ReusedError
	switch {
	case errors.As(err, &inProgress):
		p.Code, p.Detail = string(fault.InProgress), "an earlier request with this Idempotency-Key is still running; retry after the delay in Retry-After, or send Prefer: wait=N"
		// Before the first attempt commits its claim there is no action to name.
		if id := inProgress.Action.ID; id != uuid.Nil {
			p.ActionID, p.State, p.StatusURL = id.String(), string(inProgress.Action.State), statusURL(id.String())
		}
		retry = inProgress.RetryAfter
	case errors.As(err, &reused):
		p.Code, p.Detail = string(fault.KeyReused), "this Idempotency-Key was already used for a different request (another operation or other effect-bearing fields); the original action is unchanged"
		p.ActionID = reused.Action.ID.String()
	default:
		fe := fault.As(err)
		p.Code, p.Detail, p.Field = string(fe.Code), fe.Message, fe.Field
		switch fe.Code {
		case fault.Unavailable, fault.RateLimited:
			retry = time.Second
		case fault.InFlight:
			retry = 5 * time.Second
		}
	}
	p.Status = fault.Code(p.Code).HTTPStatus()
	if p.ActionID != "" {
		infoFrom(r.Context()).actionID = p.ActionID // the access log names the action the key maps to
	}
	if p.Status >= 500 {
		logFrom(r.Context()).Error().Err(err).Str("code", p.Code).Msg("request failed")
		if p.Code == string(fault.Internal) {
			p.Detail = "internal error; nothing was stored for this request"
		}
	}
	if retry > 0 && w.Header().Get("Retry-After") == "" { // a caller may know better (rate limit)
		w.Header().Set("Retry-After", retryAfterSeconds(retry))
	}
	writeProblem(w, p)
}

// retryAfterSeconds renders a delay as Retry-After: whole seconds, rounded up.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

func writeProblem(w http.ResponseWriter, p Problem) {
	p.Type = "about:blank"
	p.Title = http.StatusText(p.Status)
	// Details, the last member, is a stored rejection's body: it is copied
	// as it is (see appendRawJSON) rather than compacted again by
	// encoding/json on every replay.
	details := p.Details
	p.Details = nil
	body, _ := json.Marshal(p) // fixed struct of strings: cannot fail
	if len(details) > 0 {
		var err error
		body = append(body[:len(body)-1], `,"details":`...)
		if body, err = appendRawJSON(body, details); err != nil {
			body = nil // not JSON: an empty body, as encoding/json left it
		} else {
			body = append(body, '}')
		}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	w.Write(body) //nolint:errcheck // nothing to do about a failed write
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck
}
