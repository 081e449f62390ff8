package api

// The operator API (/v1/ops, guarded by Config.OperatorToken): operators
// list, inspect and resolve the actions of every tenant. The URL keeps the
// short name ops; in code it is the operator API, not to be confused with
// the operation registry (Config.Ops).

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/wire"
)

// operatorOnly admits requests bearing the operator token. Without a
// configured token the operator API does not exist. The token is checked by
// the operator guard (Config.OperatorGuard): past too many wrong tokens
// from the client's address, or from every address together, a request
// presenting one is answered 429 with Retry-After, its token not compared.
func (s *Server) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.OperatorToken == "" {
			writeError(w, r, fault.New(fault.NotFound, "the operator API is disabled: set ONCECALL_OPERATOR_TOKEN"))
			return
		}
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		right, wait := false, time.Duration(0)
		if strings.EqualFold(scheme, "Bearer") && token != "" {
			right, wait = s.cfg.OperatorGuard.Check(r.RemoteAddr, token)
		}
		switch {
		case wait > 0:
			if s.cfg.Metrics != nil {
				s.cfg.Metrics.RateLimited()
			}
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			writeError(w, r, fault.New(fault.RateLimited, "too many wrong operator tokens; retry after the delay in Retry-After"))
		case !right:
			w.Header().Set("WWW-Authenticate", `Bearer realm="oncecall-ops"`)
			writeError(w, r, fault.New(fault.Unauthorized, "the operator token is required"))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// OperatorAction is an action as operators see it (wire.OperatorAction).
type OperatorAction = wire.OperatorAction

// operatorListActions answers GET /v1/ops/actions: the actions of every
// tenant, filtered by state, needs_operator and limit.
func (s *Server) operatorListActions(w http.ResponseWriter, r *http.Request) {
	if err := wellFormedQuery(r.URL.RawQuery); err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	f := db.ActionFilter{State: q.Get("state"), Limit: 100}
	switch f.State {
	case "", string(oncecall.Running), string(oncecall.Completed), string(oncecall.Unknown):
	default:
		writeError(w, r, fault.Field("state", "must be running, completed or unknown"))
		return
	}
	if v := q.Get("needs_operator"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, r, fault.Field("needs_operator", "must be true or false"))
			return
		}
		f.NeedsOperator = b
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, r, fault.Field("limit", "must be an integer from 1 to 1000"))
			return
		}
		f.Limit = n
	}
	actions, err := s.cfg.Store.ListActions(r.Context(), f)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	out := make([]wire.OperatorAction, len(actions))
	for i, a := range actions {
		out[i] = wire.FromOperatorAction(a)
	}
	writeJSON(w, http.StatusOK, map[string]any{"actions": out})
}

// operatorShowAction answers GET /v1/ops/actions/{action_id}.
func (s *Server) operatorShowAction(w http.ResponseWriter, r *http.Request) {
	id, ok := actionParam(w, r)
	if !ok {
		return
	}
	d, err := s.cfg.Operator.Show(r.Context(), id)
	if err != nil {
		writeError(w, r, readErr(err, "action"))
		return
	}
	writeJSON(w, http.StatusOK, wire.FromActionDetail(d))
}

// ResolveRequest is an operator's resolution with its evidence.
type ResolveRequest struct {
	Outcome     string `json:"outcome"`
	ProviderRef string `json:"provider_ref"`
	Reason      string `json:"reason"`
	Note        string `json:"note"`
	By          string `json:"by"`
}

// operatorResolveAction answers POST /v1/ops/actions/{action_id}/resolve:
// an operator's resolution of an action (Config.Operator).
func (s *Server) operatorResolveAction(w http.ResponseWriter, r *http.Request) {
	id, ok := actionParam(w, r)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var in ResolveRequest
	if err := op.Decode(body, &in); err != nil {
		writeError(w, r, err)
		return
	}
	// The shared operator token is break-glass: its resolutions are logged
	// as such, and audited under the name given with "api".
	s.cfg.Log.Warn().Str("action_id", id.String()).Msg("operator API: resolution with the shared operator token (break-glass)")
	a, err := s.cfg.Operator.Resolve(r.Context(), id, oncecall.Resolution{
		Outcome: oncecall.Outcome(in.Outcome), ProviderRef: in.ProviderRef, Reason: in.Reason, Note: in.Note,
		Actor: oncecall.Actor{Name: in.By, Via: oncecall.ViaAPI},
	})
	if err != nil {
		writeError(w, r, readErr(err, "action"))
		return
	}
	infoFrom(r.Context()).actionID = a.ID.String()
	writeJSON(w, http.StatusOK, wire.FromOperatorAction(a))
}

func actionParam(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := uuid.Parse(chi.URLParam(r, "action_id"))
	if err != nil {
		writeError(w, r, fault.New(fault.NotFound, "no such action"))
		return uuid.UUID{}, false
	}
	return id, true
}
