package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// The voice platforms whose tool calls oncecall answers. Each adapter only
// decodes its platform's payload into a voiceCall, checks its auth and
// encodes the answer in the platform's shape; the identity rules, the say
// texts, the budget and the stale-replay checks are the shared ones below
// (docs/voice-platforms.md).
const (
	platformDasha      = "dasha"
	platformVapi       = "vapi"
	platformRetell     = "retell"
	platformElevenLabs = "elevenlabs"
)

// voiceCall is one tool call, whatever platform sent it.
type voiceCall struct {
	// Platform names the platform; it is the first part of a derived key,
	// and is kept with the action beside CallID: a call is its platform
	// and the platform's id of it, whatever that id holds.
	Platform string
	// CallID is the platform's id of the phone call (Dasha's callId,
	// Vapi's call.id, Retell's call_id, ElevenLabs' conversation id), never
	// a per-invocation id such as Vapi's toolCall id: a model that calls a
	// tool again gets a new one.
	CallID string
	// Tool is the tool's name, Arguments its arguments: an object, a JSON
	// string holding one, or absent. They are canonical JSON (part of the
	// canonicalised webhook body, see canonicalWebhook): tools decode them
	// without canonicalising them again (op.Operation.PrepareCut).
	Tool      string
	Arguments json.RawMessage
	// Caller returns the number the call comes from, if the platform says.
	Caller func() (string, bool)
	// ToolCallID is the platform's id of this invocation (Vapi's toolCall
	// id), when it sends one: traced, never part of the identity.
	ToolCallID string
}

// callField names the call id in the platform's payload, for errors.
func (c voiceCall) callField() string {
	switch c.Platform {
	case platformVapi:
		return "call.id"
	case platformRetell:
		return "call.call_id"
	case platformElevenLabs:
		return "system__conversation_id"
	}
	return "callId"
}

func (c voiceCall) callerNumber() (string, bool) {
	if c.Caller == nil {
		return "", false
	}
	return c.Caller()
}

// answerTool answers one tool call: a read-only tool, or an operation run
// through the idempotency core. An unknown tool is fault.NotFound; any
// other error is a failure that claimed nothing. An answer about an action
// is kept as what the caller heard of it (s.heard).
func (s *Server) answerTool(r *http.Request, tenant oncecall.Tenant, c voiceCall) (dashatool.Answer, error) {
	ans, err := s.toolAnswer(r, tenant, c)
	if err == nil {
		s.heard(r.Context(), tenant, c, ans)
	}
	return ans, err
}

// heardTimeout bounds the write of what a caller heard, which the answer
// waits for.
const heardTimeout = 2 * time.Second

// heard keeps an answer about an action as what the caller heard: one
// INSERT after the action's own transaction, so the claim never waits for
// it; the answer waits for it, so a normal answer is never given without
// it. It is written even when the caller has hung up meanwhile; a write
// that fails (the database gone since the answer) is logged, not hidden.
func (s *Server) heard(ctx context.Context, tenant oncecall.Tenant, c voiceCall, ans dashatool.Answer) {
	id, err := uuid.Parse(ans.ActionID)
	if err != nil {
		return // nothing was claimed: invalid arguments, a read-only tool
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), heardTimeout)
	defer cancel()
	h := oncecall.Heard{ActionID: id, Platform: c.Platform, CallID: c.CallID, Tool: c.Tool,
		Outcome: ans.Outcome, Reason: ans.Reason, Current: ans.Current, Say: ans.Say}
	if err := s.cfg.Store.AddHeard(ctx, tenant.ID, h); err != nil {
		logFrom(ctx).Error().Err(err).Str("action_id", id.String()).
			Msg("what the caller heard could not be kept: the console will not show this answer")
	}
}

func (s *Server) toolAnswer(r *http.Request, tenant oncecall.Tenant, c voiceCall) (dashatool.Answer, error) {
	ctx, info := r.Context(), infoFrom(r.Context())
	info.callPlatform, info.callID = c.Platform, c.CallID
	switch c.Tool {
	case dashatool.CheckActionStatus:
		return s.checkActionStatus(ctx, tenant, c.Arguments)
	case dashatool.FindAvailableSlots:
		return s.findAvailableSlots(ctx, tenant, c.Arguments)
	case dashatool.FindCustomer:
		return s.findCustomer(ctx, tenant, c)
	case dashatool.GetCustomer:
		return s.getCustomerTool(ctx, tenant, c.Arguments)
	case dashatool.ListAppointments:
		return s.listAppointmentsTool(ctx, tenant, c.Arguments)
	case dashatool.ListPaymentIntents:
		return s.listPaymentIntentsTool(ctx, tenant, c.Arguments)
	case dashatool.ListServices:
		return s.listServicesTool(ctx, tenant, c.Arguments)
	case dashatool.ListPractitioners:
		return s.listPractitionersTool(ctx, tenant, c.Arguments)
	}
	o, ok := s.cfg.Ops.ByTool(c.Tool)
	if !ok {
		return dashatool.Answer{}, fault.New(fault.NotFound, "no tool named %s", c.Tool)
	}
	info.operation = o.Name()
	return s.runTool(r, tenant, o, c)
}

// decodePart decodes raw, an object within a webhook's canonical body (see
// canonicalWebhook) found at field, into v. Like the body, its keys that
// differ only in case from one of v's fields are refused (op.CheckFieldNamesAt),
// at every depth v's type reaches; anything but an object is
// fault.Field(field, notObject).
func decodePart(raw json.RawMessage, v any, field, notObject string) error {
	if len(raw) == 0 || raw[0] != '{' {
		return fault.Field(field, "%s", notObject)
	}
	if err := op.CheckFieldNamesAt(raw, v, field+"."); err != nil {
		return err
	}
	if json.Unmarshal(raw, v) != nil {
		return fault.Field(field, "%s", notObject)
	}
	return nil
}

// keyFromHeader lets a voice platform's webhook carry the tenant's API key
// in the platform's secret header (Vapi's server URL secret, a secret
// header configured on an ElevenLabs tool) instead of Authorization: when
// Authorization is absent, the key is taken from header and authenticated
// like a Bearer key. A request that carries a key in both must carry the
// same one: two different keys (or another scheme next to the header) are
// refused with 400 rather than one of them chosen, as RFC 6750 refuses a
// token sent in more than one way. It is a middleware of that platform's
// sub-router only.
func keyFromHeader(header string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get(header)
			if key == "" {
				next.ServeHTTP(w, r)
				return
			}
			auth := r.Header.Get("Authorization")
			if auth == "" {
				r.Header.Set("Authorization", "Bearer "+key)
				next.ServeHTTP(w, r)
				return
			}
			scheme, bearer, _ := strings.Cut(auth, " ")
			if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(bearer)), []byte(strings.TrimSpace(key))) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="oncecall", error="invalid_request"`)
				writeError(w, r, fault.New(fault.InvalidInput, "the request carries two different credentials, in Authorization and in %s: send the API key in one of them", header))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
