package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// dashaPayload is a Dasha BlackBox ToolWebHookPayload. Fields not listed
// are tolerated: Dasha may add some.
type dashaPayload struct {
	Type                string          `json:"type"`
	Status              string          `json:"status"`
	CallID              string          `json:"callId"`
	AgentID             string          `json:"agentId"`
	OrgID               string          `json:"orgId"`
	ToolName            string          `json:"toolName"`
	Arguments           json.RawMessage `json:"arguments"`
	CallAdditionalData  json.RawMessage `json:"callAdditionalData"`
	AgentAdditionalData json.RawMessage `json:"agentAdditionalData"`
	ServerJobID         json.RawMessage `json:"serverJobId"`
	SIP                 json.RawMessage `json:"sip"`
	Endpoint            json.RawMessage `json:"endpoint"`
}

const toolPayloadType = "ToolWebHookPayload"

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// dashaTool answers a Dasha tool call: POST /v1/dasha/tools/{toolName} and
// POST /v1/dasha/tools (routed by the body's toolName). Protocol errors (bad
// payload, wrong org, unknown tool) are problem+json like REST and claim
// nothing; every business result, invalid arguments included, is HTTP 200
// with a dashatool.Answer the model can act on.
func (s *Server) dashaTool(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	// Dasha documents no Content-Type for its webhooks: the body is parsed
	// as JSON whatever it declares, since a 415 would silently turn every
	// call into the tool's fallback.
	body, err := readRaw(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p, err := decodePayload(body, chi.URLParam(r, "toolName"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	info.callPlatform, info.callID = platformDasha, p.CallID
	tenant := tenantFrom(r.Context())
	if err := checkOrg(tenant, p.OrgID); err != nil {
		writeError(w, r, err)
		return
	}
	s.answerVoice(w, r, voiceCall{
		Platform: platformDasha, CallID: p.CallID, Tool: p.ToolName, Arguments: p.Arguments,
		Caller: func() (string, bool) { return dashatool.CallerNumber(p.Endpoint) },
	})
}

// decodePayload checks the envelope. The body is canonicalised first, so
// invalid UTF-8 and duplicate keys are rejected before anything reads it.
func decodePayload(body []byte, pathTool string) (dashaPayload, error) {
	var p dashaPayload
	if err := decodeWebhook(body, &p, "a ToolWebHookPayload"); err != nil {
		return p, err
	}
	if p.Type != toolPayloadType {
		return p, fault.Field("type", "must be %s", toolPayloadType)
	}
	switch {
	case pathTool != "" && p.ToolName == "":
		p.ToolName = pathTool
	case pathTool != "" && p.ToolName != pathTool:
		return p, fault.Field("toolName", "does not match the tool in the URL")
	case p.ToolName == "":
		return p, fault.Field("toolName", "is required")
	}
	if !toolNamePattern.MatchString(p.ToolName) || len(p.ToolName) > 64 {
		return p, fault.Field("toolName", "must be a tool name such as book_appointment")
	}
	if p.CallID != "" && (len(p.CallID) > 200 || idem.ValidateKey(p.CallID) != nil) {
		return p, fault.Field("callId", "must be at most 200 printable ASCII characters")
	}
	return p, nil
}

// decodeWebhook decodes a Dasha webhook body (what, e.g. "a
// ToolWebHookPayload", names it in errors) into v, whose fields are
// strings or raw JSON. The body is canonicalised first, so invalid UTF-8
// and duplicate keys are rejected before anything reads it; unknown fields
// are tolerated (Dasha may add some), but not a key that differs from a
// known field only in case, which encoding/json would take for it.
func decodeWebhook(body []byte, v any, what string) error {
	_, err := canonicalWebhook(body, v, what)
	return err
}

// canonicalWebhook is decodeWebhook that also returns the body's canonical
// form, for a caller that hands part of it on as it is.
func canonicalWebhook(body []byte, v any, what string) ([]byte, error) {
	c, err := canon.Canonical(body)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidJSON, err, err.Error())
	}
	if len(c) == 0 || c[0] != '{' {
		return nil, fault.New(fault.InvalidJSON, "the request body must be %s (a JSON object)", what)
	}
	// An envelope of strings and raw JSON is checked and decoded in one
	// walk over c (op.DecodeWebhook); any other shape in two passes.
	if ok, err := op.DecodeWebhook(c, v); ok {
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	if err := op.CheckFieldNames(c, v); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(c, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, fault.Field(typeErr.Field, "must be a string")
		}
		return nil, fault.Wrap(fault.InvalidJSON, err, "the request body is not "+what)
	}
	return c, nil
}

// checkOrg refuses a webhook from another Dasha orgId than the one the
// tenant is bound to, if it is bound to one.
func checkOrg(tenant oncecall.Tenant, orgID string) error {
	if tenant.DashaOrgID != "" && orgID != tenant.DashaOrgID {
		return fault.New(fault.Forbidden, "this API key's tenant does not accept calls from that Dasha orgId")
	}
	return nil
}

// toolInput decodes a read-only tool's arguments into in and normalises
// them. ok is false when they are bad: ans is then the invalid_arguments
// answer, or err a failure.
func toolInput[In interface{ Normalize() error }](raw json.RawMessage, in In) (ans dashatool.Answer, ok bool, err error) {
	args, bad := toolArguments(raw)
	if bad != nil {
		return *bad, false, nil
	}
	err = op.DecodeCanonical(args, in)
	if err == nil {
		err = in.Normalize()
	}
	if err != nil {
		ans, err := invalid(err)
		return ans, false, err
	}
	return dashatool.Answer{}, true, nil
}

// toolArguments returns a tool call's arguments (canonical JSON, see
// voiceCall) as a canonical JSON object: absent or null arguments are an
// empty object, and a string holding an object is unwrapped and
// canonicalised. An object is returned as it is: it is not parsed again.
func toolArguments(raw json.RawMessage) ([]byte, *dashatool.Answer) {
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}"), nil
	}
	if raw[0] == '"' {
		var err error
		if raw, err = encodedArguments(raw); err != nil {
			a := dashatool.Invalid("arguments", fault.As(err).Message)
			return nil, &a
		}
	}
	if raw[0] != '{' {
		a := dashatool.Invalid("arguments", "arguments must be a JSON object")
		return nil, &a
	}
	return raw, nil
}

// invalid turns an input error into the invalid_arguments answer; any other
// error is returned.
func invalid(err error) (dashatool.Answer, error) {
	fe := fault.As(err)
	if fe.Code != fault.InvalidInput && fe.Code != fault.InvalidJSON {
		return dashatool.Answer{}, err
	}
	return dashatool.Invalid(fe.Field, fe.Message), nil
}

// runTool performs an operation for a tool call through the idempotency
// core, in the tool call's execute_tool span.
func (s *Server) runTool(r *http.Request, tenant oncecall.Tenant, o op.Operation, c voiceCall) (dashatool.Answer, error) {
	ctx, span := telemetry.StartTool(r.Context(), telemetry.Tool{
		Name: c.Tool, Operation: o.Name(), Platform: c.Platform, CallID: c.CallID, ToolCallID: c.ToolCallID,
	})
	if !span.IsRecording() {
		return s.runOp(r, tenant, o, c)
	}
	ans, err := s.runOp(r.WithContext(ctx), tenant, o, c)
	info := infoFrom(ctx)
	done := telemetry.Done{ActionID: ans.ActionID, Outcome: ans.Outcome, Replay: info.replayed, ErrorType: errorType(err)}
	if ans.Reason == dashatool.InvalidArguments {
		done.ErrorType = ans.Reason
	}
	telemetry.EndTool(span, done)
	return ans, err
}

// runOp is runTool's work.
func (s *Server) runOp(r *http.Request, tenant oncecall.Tenant, o op.Operation, c voiceCall) (dashatool.Answer, error) {
	ctx, info := r.Context(), infoFrom(r.Context())
	confirmed, args, bad := cutConfirmation(c.Arguments)
	if bad != nil {
		return *bad, nil
	}
	prep, given, ans, ok, err := prepareTool(o, args)
	if !ok {
		return ans, err
	}
	if prep, err = s.resolve(ctx, tenant, prep); err != nil {
		return invalid(err)
	}
	key, derived, named, err := s.toolKey(r, tenant, o, c, given, prep)
	if err != nil {
		if fault.As(err).Field == "action_id" {
			return invalid(err)
		}
		return dashatool.Answer{}, err
	}
	info.keyHash = idem.KeyHash(key)
	req, err := s.request(r, prep, key, s.dashaWait(ctx))
	if err != nil {
		return dashatool.Answer{}, err
	}
	// The confirmation gate, asked by the core before anything performs.
	if req.Gate, err = s.gateFor(ctx, tenant, prep, c, confirmed); err != nil {
		return dashatool.Answer{}, err
	}
	if derived {
		req.Stale = s.stale(prep)
	}
	req.CallPlatform, req.CallID, req.Named = c.Platform, c.CallID, named
	if seat := &info.seat; seat.gated() {
		req.Place = seat // held since shareDB
	}
	reply, err := s.cfg.Core.Do(ctx, req)
	var inProgress *idem.InProgressError
	var reused *idem.ReusedError
	var refusal *gateRefusal
	switch {
	case errors.As(err, &refusal):
		return refusal.answer, nil
	case errors.As(err, &inProgress):
		if inProgress.Action.ID != uuid.Nil {
			info.actionID = inProgress.Action.ID.String()
		}
		return dashatool.InProgress(inProgress.Action.ID, o.Phrases()), nil
	case errors.As(err, &reused):
		return s.conflicting(ctx, tenant, prep, reused.Action)
	case err != nil:
		// Input the claim's transaction refused (a template's variables)
		// claimed nothing: invalid_arguments like any other bad input.
		return invalid(err)
	}
	info.actionID, info.replayed = reply.Action.ID.String(), reply.Replayed
	ans, err = s.speakable(ctx, tenant, reply.Action, reply.Replayed, dashatool.ForAction(reply.Action, o.Phrases()))
	if err != nil || !reply.Replayed || derived {
		return ans, err
	}
	// A repeat that names its action hears what became of it.
	return s.changed(ctx, ans, reply.Action, o.Phrases())
}

// prepareTool validates and normalises a tool call's arguments for o, and
// takes out the action_id they may name (given). The arguments are
// canonical already: they are decoded once, without being canonicalised or
// re-encoded again. ok is false when they are bad: ans is then the
// invalid_arguments answer, or err a failure.
func prepareTool(o op.Operation, raw json.RawMessage) (prep *op.Prepared, given string, ans dashatool.Answer, ok bool, err error) {
	args, bad := toolArguments(raw)
	if bad != nil {
		return nil, "", *bad, false, nil
	}
	// One walk takes out the action_id and checks and decodes the rest
	// (op.Operation.PrepareCut); a bad action_id is answered first.
	prep, id, err := o.PrepareCut(args, "action_id")
	if id != nil && string(id) != "null" && json.Unmarshal(id, &given) != nil {
		return nil, "", dashatool.Invalid("action_id", "action_id must be a string"), false, nil
	}
	if err != nil {
		ans, err := invalid(err)
		return nil, "", ans, false, err
	}
	return prep, given, dashatool.Answer{}, true, nil
}

// stale is the Stale check of a request whose key was derived from
// identity fields: the stored answer no longer holds when it was a
// rejection (it did nothing; the same request is decided afresh) or a
// confirmation whose object has changed since. The core does not ask it
// about a rejection of the same arguments recorded moments ago
// (idem.Config.RejectionHold): duplicates of one tool call hear the first
// attempt's answer. The identity fields, the only ones Standing looks at,
// are the same in p and in the stored action.
func (s *Server) stale(p *op.Prepared) idem.Staleness { return staleness{s, p} }

// staleness is Server.stale's check of one request.
type staleness struct {
	s *Server
	p *op.Prepared
}

func (st staleness) Stale(ctx context.Context, a oncecall.Action) (bool, error) {
	s, p := st.s, st.p
	if a.Outcome == oncecall.Rejected {
		// Within the core's hold a request that restates the
		// rejected one (a charge naming the intent's own amount) is
		// that request again: it hears the rejection (conflicting
		// replays what it restates), and the provider is not asked
		// twice.
		if !s.cfg.Core.Holds(a) {
			return true, nil
		}
		same, err := p.Restates(ctx, s.cfg.Store, a)
		return !same, err
	}
	if !p.HasStanding() {
		return false, nil
	}
	if err := s.refreshCalendar(ctx, a); err != nil {
		return false, err
	}
	now, err := p.Standing(ctx, s.cfg.Store, a)
	return now != "", err
}

// changed adds to ans what became of a confirmed action's object since.
func (s *Server) changed(ctx context.Context, ans dashatool.Answer, a oncecall.Action, p op.Phrases) (dashatool.Answer, error) {
	if err := s.refreshCalendar(ctx, a); err != nil {
		return dashatool.Answer{}, err
	}
	current, err := s.cfg.Ops.Standing(ctx, s.cfg.Store, a)
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	return dashatool.Changed(ans, p, current), nil
}

// toolKey picks the idempotency key of a tool call: the action named by the
// arguments' action_id, the Idempotency-Key header, or a key derived from
// the operation's identity fields, the tenant and (for per-call operations)
// the call (derived reports which). Derived keys are hashes: no customer
// data in keys or logs.
//
// An action_id is never a key of its own: one that names no action of the
// tenant (a word the model made up, a UUID of nothing) is refused as an
// invalid argument, since taken as a key it would be shared with every
// caller who made up the same, REST keys included, and answer one caller
// with another's action.
func (s *Server) toolKey(r *http.Request, tenant oncecall.Tenant, o op.Operation, c voiceCall, given string, prep *op.Prepared) (key string, derived bool, named uuid.UUID, err error) {
	if given != "" {
		id, err := uuid.Parse(given)
		if err != nil || len(given) != 36 {
			return "", false, uuid.Nil, fault.Field("action_id", "must be the action_id of an earlier answer, exactly as it gave it")
		}
		a, err := s.cfg.Store.ActionByID(r.Context(), tenant.ID, id)
		switch {
		case errors.Is(err, db.ErrNotFound):
			return "", false, uuid.Nil, fault.Field("action_id", "names no earlier request; leave it out for a new one")
		case err != nil:
			return "", false, uuid.Nil, db.Fault(err)
		case a.Operation != prep.Operation:
			// The model passed the id of another tool's action: that is not
			// a retry of it, so the request gets its own identity.
		case a.State == oncecall.Completed && a.Outcome == oncecall.Rejected && a.Fingerprint != prep.Fingerprint:
			// A rejection did nothing; new details after it are a new
			// request (another slot after slot_unavailable), not a conflict.
		default:
			// A retry or re-plan of that action, answered for it (the core
			// compares fingerprints), even if its key is retired meanwhile.
			return a.Key, false, a.ID, nil
		}
	} else if key, present, err := headerKey(r); present {
		return key, false, uuid.Nil, err
	}
	parts := []string{c.Platform, tenant.ID.String(), o.Name()}
	if prep.PerCall {
		if c.CallID == "" {
			return "", false, uuid.Nil, fault.Field(c.callField(), "is required for %s when no action_id or Idempotency-Key is given", o.Tool())
		}
		parts = append(parts, c.CallID)
	}
	identity := prep.Identity
	if prep.RemoteIdentity != nil {
		remote, err := s.remoteFor(r.Context(), tenant.ID, prep.Capability)
		if err != nil {
			return "", false, uuid.Nil, err
		}
		if remote {
			identity = prep.RemoteIdentity
		}
	}
	return idem.DeriveKey(append(parts, identity...)...), true, uuid.Nil, nil
}

func (s *Server) checkActionStatus(ctx context.Context, tenant oncecall.Tenant, raw json.RawMessage) (dashatool.Answer, error) {
	var in dashatool.StatusInput
	if ans, ok, err := toolInput(raw, &in); !ok {
		return ans, err
	}
	a, err := s.cfg.Store.ActionByID(ctx, tenant.ID, uuid.MustParse(in.ActionID))
	if errors.Is(err, db.ErrNotFound) {
		return dashatool.Unknown(in.ActionID), nil
	}
	if err == nil && a.State == oncecall.Completed {
		// Not an answer a failover could take back (see idem's replay).
		err = s.cfg.Store.Replicated(ctx)
	}
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	infoFrom(ctx).actionID = a.ID.String()
	var phrases op.Phrases
	if o, ok := s.cfg.Ops.Get(a.Operation); ok {
		phrases = o.Phrases()
	}
	// A status check reads the action again: its figures are read now.
	ans, err := s.speakable(ctx, tenant, a, true, dashatool.ForAction(a, phrases))
	if err != nil {
		return ans, err
	}
	return s.changed(ctx, ans, a, phrases)
}

func (s *Server) findAvailableSlots(ctx context.Context, tenant oncecall.Tenant, raw json.RawMessage) (dashatool.Answer, error) {
	var in dashatool.SlotsInput
	if ans, ok, err := toolInput(raw, &in); !ok {
		return ans, err
	}
	clock, err := s.tenantClock(ctx, tenant.ID)
	if err != nil {
		return dashatool.Answer{}, err
	}
	q, err := s.slotQuery(ctx, tenant.ID, in, clock.Zone, clock.Loc)
	if err != nil {
		return invalid(err)
	}
	q.Limit++ // one more: is there more to hear?
	slots, err := s.openSlots(ctx, tenant.ID, q)
	if err != nil {
		return dashatool.Answer{}, db.Fault(err)
	}
	more := len(slots) > in.N()
	if more {
		slots = slots[:in.N()]
	}
	return dashatool.SlotsAnswer(clock.Zone, dashatool.SlotViews(slots, clock, time.Now()), more), nil
}

// dashaError keeps protocol errors and 503 as they are and turns any other
// failure into 503: the attempt's transaction rolled back, nothing is
// claimed, and Dasha's retry (5xx is retried, 4xx is not) is safe because it
// maps to the same action.
func dashaError(err error) error {
	if errors.Is(err, context.Canceled) || fault.CodeOf(err) != fault.Internal {
		return err
	}
	return fault.Wrap(fault.Unavailable, err, "the tool call could not be completed; nothing was stored for it, retry")
}
