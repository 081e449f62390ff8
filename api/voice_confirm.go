package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
)

// The confirmation gate (a tenant setting, off by default): a voice tool
// call that books, moves or cancels an appointment or charges a payment
// performs nothing unless it carries in caller_confirmed the echo of the
// read-back the gate gave for exactly that effect. The read-back is built
// from the values the effect will have (the instant in the zone where it
// takes place, the practitioner and location, or the amount and its
// currency); its echo carries a code that binds them, with the request's
// arguments, the call and the action the request would supersede, so an
// echo given for one effect confirms no other. The gate is an idem.Gate:
// the core asks it on every path that would perform, and never for an
// answer that stands. The argument is not part of the request's identity:
// the confirmed call is the same request, performed once.
const (
	callerConfirmedArg      = dashatool.CallerConfirmed
	cancelOperation         = "appointment.cancel"
	needsCallerConfirmation = dashatool.NeedsCallerConfirmation
	maxConfirmation         = 200
	// echoVersion names how an echo's code is made; a new way is a new
	// version, and an echo made the old way is refused (and read back
	// again).
	echoVersion = "oncecall caller confirmation 1"
)

// gated reports whether an operation is behind the confirmation gate.
func gated(operation string) bool { return dashatool.Gated(operation) }

// cutConfirmation takes caller_confirmed out of a tool call's arguments
// (canonical JSON, see voiceCall): the rest are the request's arguments.
// bad is the invalid_arguments answer for arguments that are not an
// object, or a caller_confirmed that is not a short string.
func cutConfirmation(raw json.RawMessage) (confirmed string, rest json.RawMessage, bad *dashatool.Answer) {
	args, bad := toolArguments(raw)
	if bad != nil {
		return "", nil, bad
	}
	v, rest, found := canon.Cut(args, callerConfirmedArg)
	if !found {
		return "", args, nil
	}
	if string(v) != "null" && (json.Unmarshal(v, &confirmed) != nil || len(confirmed) > maxConfirmation) {
		a := dashatool.Invalid(callerConfirmedArg, fmt.Sprintf("caller_confirmed must be a string of at most %d characters: "+
			"the details.caller_confirmed of the read-back the caller said yes to", maxConfirmation))
		return "", nil, &a
	}
	return strings.TrimSpace(confirmed), rest, nil
}

// confirmation is the gate of one voice tool call (see idem.Gate): what it
// asks, in which call, and the echo it carries (given; "" for none).
type confirmation struct {
	s      *Server
	tenant oncecall.Tenant
	prep   *op.Prepared
	call   voiceCall
	given  string
}

var _ idem.Gate = confirmation{}

// gateFor is the gate of a tool call, or nil when its operation is not
// gated or its tenant's gate is off. The tenant's setting is read first,
// so a tenant without the gate pays one read.
func (s *Server) gateFor(ctx context.Context, tenant oncecall.Tenant, prep *op.Prepared, c voiceCall, given string) (idem.Gate, error) {
	if !gated(prep.Operation) {
		return nil, nil
	}
	on, err := s.cfg.Store.CallerConfirmation(ctx, tenant.ID)
	if err != nil || !on {
		return nil, db.Fault(err)
	}
	return confirmation{s: s, tenant: tenant, prep: prep, call: c, given: given}, nil
}

// Admit lets the request perform when it carries the echo of what it
// would do now, after prior; otherwise it refuses with the read-back
// (gateRefusal). A request whose target cannot be read (no such slot,
// appointment or intent) is admitted: the operation refuses it.
func (g confirmation) Admit(ctx context.Context, prior *oncecall.Action) error {
	rb, found, err := g.s.readBack(ctx, g.tenant, g.prep)
	if err != nil || !found {
		return err
	}
	echo := g.echo(rb, prior)
	if g.given != "" && sameEcho(g.given, echo) {
		return nil
	}
	ans, err := rb.refusal(echo, g.given)
	if err != nil {
		return err
	}
	return &gateRefusal{answer: ans}
}

// echo is what caller_confirmed must carry to confirm rb: its readable
// value (the local time with its offset, or the amount and currency) and a
// code, the first 8 hex digits of a SHA-256 over what the confirmation
// binds: the tenant, the operation, the request's fingerprint (every
// argument that bears on the effect: customer, slot, service, amount, ...),
// the voice call, the action the request would supersede (none for a free
// key), the sentence read back and the values it was read from. Nothing
// is kept between the read-back and its echo: any replica checks it.
func (g confirmation) echo(rb readBack, prior *oncecall.Action) string {
	priorID := ""
	if prior != nil {
		priorID = prior.ID.String()
	}
	h := sha256.New()
	parts := []string{echoVersion, g.tenant.ID.String(), g.prep.Operation, g.prep.Fingerprint,
		g.call.Platform, g.call.CallID, priorID, rb.Sentence}
	for _, p := range append(parts, rb.bound...) {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return rb.value + " #" + hex.EncodeToString(h.Sum(nil))[:8]
}

// sameEcho compares caller_confirmed with the echo, case and spacing
// aside.
func sameEcho(given, echo string) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	return norm(given) == norm(echo)
}

// gateRefusal is the gate's refusal of a request: the
// needs_caller_confirmation answer, which Do returns as its error with
// nothing claimed.
type gateRefusal struct{ answer dashatool.Answer }

func (*gateRefusal) Error() string { return "the caller has not confirmed what this request would do" }

// readBack is what the caller must confirm before a gated request runs.
type readBack struct {
	// Sentence is read to the caller as it is.
	Sentence string
	// Said is the time or amount as it is said.
	Said string
	// value is the readable part of the echo: the local time with its
	// offset (2031-06-18T15:30-04:00), or the amount and currency
	// (45.00 USD).
	value string
	// bound are the values the effect will have, which the echo's code
	// binds with the sentence.
	bound   []string
	details map[string]any
	// place is the slot a time read back is of (timeReadBack).
	place oncecall.OpenSlot
}

// refusal is the needs_caller_confirmation answer for rb: the sentence to
// read back and the echo to send once the caller says yes; given, when the
// request carried another echo, is named as not this confirmation.
func (rb readBack) refusal(echo, given string) (dashatool.Answer, error) {
	details := rb.details
	details["code"] = "NEEDS_CALLER_CONFIRMATION"
	details["read_back"] = rb.Sentence
	details[callerConfirmedArg] = echo
	say := fmt.Sprintf("Nothing was done yet: this needs the caller's explicit confirmation first. Read this back to the caller, "+
		"exactly: %q If they clearly say yes to it, call this tool again with the same arguments and caller_confirmed set to %q, "+
		"exactly as given. If they want something else, do not call it with this confirmation.", rb.Sentence, echo)
	if given != "" {
		details["given"] = given
		say = fmt.Sprintf("Nothing was done: caller_confirmed %q is not the confirmation of what this request would do now (%s), "+
			"so it is not the caller's yes to it. ", given, rb.Said) + say
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return dashatool.Answer{}, err
	}
	return dashatool.Answer{Outcome: string(oncecall.Rejected), Reason: needsCallerConfirmation, Say: say, Details: raw}, nil
}
