// Package op is the operation registry. An operation is declared once, as a
// Spec: its name and phrases, and its logic, a value whose methods are the
// operation's steps (normalise, execute or statement, and optional ones:
// resolve, identity, restates, standing, remote writes). The REST and voice
// surfaces and the idempotency core all work from that one declaration; a
// reader follows a call from the core to the operation's code through these
// interfaces (docs/architecture.md).
package op

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/provider"
)

// Spec declares one operation. In is the input struct; every field of the
// normalised input is effect-bearing: it goes into the fingerprint.
type Spec[In any] struct {
	// Name is the operation's stable name, e.g. "appointment.book".
	Name string
	// Label is what staff read of it in the console, e.g. "Booking".
	Label string
	// Version is the input schema version; it is part of the fingerprint.
	Version int
	// Tool is the Dasha tool name, e.g. "book_appointment"; empty for
	// operations that are not offered to voice agents.
	Tool string
	// Description tells a voice agent's model when to call the tool.
	Description string
	// PerCall makes the call id part of a derived identity.
	PerCall bool
	// Logic is the operation: an Executor or a Stater, and any of the
	// optional interfaces below (Resolver, Identifier, RemoteIdentifier,
	// CallScoper, Restater, Stander, ResourceStander).
	Logic Logic[In]
	// Say phrases each outcome for a voice agent.
	Say Phrases
	// Remote declares how the operation runs when its capability is served
	// by a remote provider; nil means it is always local.
	Remote Remote[In]
}

// Logic is what every operation does: validate the decoded input and
// normalise it in place, returning a *fault.Error naming the field for bad
// input. An operation implements Executor or Stater too.
type Logic[In any] interface {
	Normalize(in *In) error
}

// Executor is an operation whose local implementation is Go: Execute
// performs its writes inside the claim's transaction.
type Executor[In any] interface {
	Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in In) (idem.Result, error)
}

// Stater is an operation whose local implementation is one statement:
// Statement picks it (a db.Statement method: claim, writes and completion
// with the outcome and answer decided in SQL, one round trip). Work SQL
// cannot do is a follow-up in the statement's transaction
// (db.Statement.Then; x is the action's).
type Stater[In any] interface {
	Statement(s *db.Statement, x idem.Exec, in In)
}

// Resolver settles with the tenant's data what Normalize cannot settle
// alone, so that two spellings of one meaning are one input (a booking's
// local time becomes the instant it names in its location's timezone). It
// rewrites in and reports whether it changed it; it runs before the
// fingerprint and the identity are taken (see Prepared.Resolve). A
// *fault.Error names a bad field.
type Resolver[In any] interface {
	Resolve(ctx context.Context, s *db.Store, tenant uuid.UUID, in *In) (changed bool, err error)
}

// Identifier returns the fields that identify the intent when a voice call
// gives no key (docs/identity-and-leases.md); without it, every input
// field does.
type Identifier[In any] interface {
	Identity(in In) []string
}

// RemoteIdentifier is Identifier when the operation's capability is served
// by a remote provider: a write that amends locally (a call's note) is a
// second write there, so its identity must not let a reworded request
// through.
type RemoteIdentifier[In any] interface {
	RemoteIdentity(in In) []string
}

// CallScoper makes the call id part of the derived identity of the inputs
// it reports (a customer known by name alone is only the same customer
// within one call); Spec.PerCall still applies to all.
type CallScoper[In any] interface {
	CallScoped(in In) bool
}

// Restater reports whether in asks for exactly what the stored input of a
// completed action did, though it is spelled with other details (a field
// restating a default, a reworded reason): such a request is answered as a
// replay of that action, not a conflict.
type Restater[In any] interface {
	Restates(ctx context.Context, s *db.Store, tenant uuid.UUID, stored, in In) (bool, error)
}

// Stander tells what became of the object a completed, confirmed action
// describes: "" while its answer still holds (the booked appointment is
// active in that slot), otherwise a word for what changed since
// ("cancelled", "moved", "changed"). A key derived from identity fields
// replays only while the answer holds, and check_action_status reports the
// change. Without it, the answer always holds.
type Stander[In any] interface {
	Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, in In, resourceID string) (string, error)
}

// ResourceStander is Stander for an action whose request was pruned: it
// sees only the resource id (a booking's appointment is still known to be
// cancelled).
type ResourceStander interface {
	StandingByResource(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID string) (string, error)
}

// Remote declares an operation's remote writes: the required one, of
// Capability, whose provider receives Payload and whose record Confirmed
// turns into the result. Optional interfaces add writes before it
// (Befores), after it (FollowUpper), inputs served locally whatever the
// provider (Localer), local checks in the claim (Reserver), and the local
// record of the outcome (Settler).
type Remote[In any] interface {
	// Capability is the provider capability of the required write.
	Capability() string
	// Payload is what the provider receives (ids and business fields).
	Payload(in In) any
	// Confirmed turns the provider's record of the write into the result.
	Confirmed(in In, rec provider.Record) (idem.Result, error)
}

// Befores are writes made, in order, before the required one: each is sent
// once the one before it succeeded, and one the provider refuses refuses
// the action (the required write is never made). Unlike a follow-up, a
// write before is recorded whatever its capability: one whose capability is
// local is made by the local provider (an SMS queued in the outbox). A
// later step's payload may carry what an earlier one gave back
// (provider.Record.Data).
type Befores[In any] interface {
	Before(in In) []FollowUp
}

// FollowUpper lists further writes once the required one succeeded (e.g. a
// confirmation message). They are resumed until done but never change the
// action's outcome.
type FollowUpper[In any] interface {
	FollowUps(in In) []FollowUp
}

// Localer reports inputs that are served locally whatever the provider:
// nothing of them is the provider's (an intent approved to be paid by a
// payment link holds nothing on a card).
type Localer[In any] interface {
	Local(in In) bool
}

// Reserver runs in the claim's transaction before the write is recorded:
// the local checks and holds the remote write needs (the approved,
// uncaptured intent of this tenant, held for this action), and what the
// write carries from the tenant's data (a message template's text): its
// Payload is recorded with the step and sent by every dispatch and
// recovery, so a later change of that data never changes the write. An
// error (a *fault.Error for bad input) rolls the claim back.
type Reserver[In any] interface {
	Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in In) (Reservation, error)
}

// Settler runs in the transaction that completes the action from the
// provider's answer or an operator's decision, with the result the caller
// will hear and the provider's reference of the write (empty for a
// rejection): it records the outcome locally.
type Settler[In any] interface {
	Settle(ctx context.Context, tx *db.Tx, x idem.Exec, in In, res idem.Result, providerRef string) error
}

// Reservation is what a Reserver decided.
type Reservation struct {
	// Reject, when set, is a definitive answer found before anything was
	// sent: the action completes with it and no step is recorded.
	Reject *idem.Result
	// Done, when set, is a definitive answer of writes Reserve made itself
	// in the claim's transaction (nothing of the input is the provider's:
	// an intent without a hold is withdrawn locally): the action completes
	// with it and no step is recorded.
	Done *idem.Result
	// Payload, when set, replaces Remote.Payload(in) for the required write (the
	// amount and currency read from the intent).
	Payload any
	// Provider, when set, names the provider the required write is sent to
	// (a tenant's own calendar, stored with the tenant): the step is planned
	// for it, not by the server's configuration.
	Provider provider.Identity
	// FollowUps, by step name, replace the payloads the follow-ups and the
	// writes before the required one declared (a confirmation's text,
	// rendered now).
	FollowUps map[string]any
}

// FollowUp is a further remote write of an action.
type FollowUp struct {
	Name       string
	Capability string
	Operation  string
	Payload    any
}

// Phrases is what a voice agent may say for each outcome.
type Phrases struct {
	// Confirmed may claim an effect outside oncecall (a card charged, a
	// message sent) only when no confirmed answer of the operation lacks
	// one: see Performed.
	Confirmed string
	// Performed, when set, is said instead of Confirmed of an action whose
	// effect outside oncecall a provider performed: its answer names the
	// provider's record (provider_ref). Confirmed is then what is said of
	// one that oncecall only recorded in its own tables (a message in the
	// outbox, which nothing sends), and of one whose answer was pruned: it
	// must claim nothing outside oncecall.
	Performed string
	// Rejected maps a rejection reason to guidance; "" is the fallback.
	Rejected map[string]string
	// Pending says that the outcome is NOT confirmed and what the agent must
	// not tell the caller meanwhile. It must not read like a confirmation,
	// even negated ("do not say it is done"): a test checks the wording.
	// The Dasha answer follows it with how to learn the outcome.
	Pending string
	// Changed is what an agent may say of a confirmed action whose object
	// has changed since (see Stander): it must not repeat the
	// confirmation as current.
	Changed string
	// Withhold names fields of the result a voice agent is not given
	// (contact data it does not need to read back), at the top level and in
	// the objects the result holds.
	Withhold []string
}

// Prepared is a validated, normalised request for an operation.
type Prepared struct {
	Operation string
	// Input is the canonical JSON of the normalised input.
	Input       []byte
	Fingerprint string
	// Identity lists the identity field values, in declaration order.
	Identity []string
	// RemoteIdentity is Identity when the capability is remote (see
	// RemoteIdentifier); nil: the same as Identity.
	RemoteIdentity []string
	// PerCall: the call id is part of the derived identity of this input.
	PerCall bool
	// Capability is the provider capability of the operation's required
	// write; empty for operations that are always local (or an input that
	// is, see Localer).
	Capability string
	// b is the operation's logic bound to this input.
	b binding
}

// binding is an operation's logic bound to one normalised input: the
// idempotency core's unit of work (idem.Work), and what the surfaces ask of
// the request before and after it runs. Its one implementation is
// *bound[In].
type binding interface {
	idem.Work
	resolve(ctx context.Context, s *db.Store, tenant uuid.UUID) (*Prepared, error)
	restates(ctx context.Context, s *db.Store, a oncecall.Action) (bool, error)
	standing(ctx context.Context, s *db.Store, a oncecall.Action) (string, error)
	hasStanding() bool
	steps(remote idem.Remotes) ([]db.NewStep, error)
	confirmed(rec provider.Record) (idem.Result, error)
	settle(ctx context.Context, tx *db.Tx, x idem.Exec, res idem.Result, providerRef string) error
}

// Work is the request's unit of work for the idempotency core
// (idem.Request.Work): the operation's statement, or its Go writes, and a
// remote action's local checks, bound to this input.
func (p *Prepared) Work() idem.Work { return p.b }

// Resolve returns this request as the operation's Resolver settles it with
// the tenant's data: itself when nothing changes (or the operation has
// nothing to settle), else a new Prepared whose input, fingerprint and
// identity are the settled ones. The REST and voice surfaces call it before
// they pick the request's key.
func (p *Prepared) Resolve(ctx context.Context, s *db.Store, tenant uuid.UUID) (*Prepared, error) {
	settled, err := p.b.resolve(ctx, s, tenant)
	if settled == nil && err == nil {
		return p, nil
	}
	return settled, err
}

// Restates reports whether this request asks for exactly what the completed
// action a asked (see Restater), whether it was confirmed or rejected; false
// when the operation has no Restater (only an equal fingerprint does).
func (p *Prepared) Restates(ctx context.Context, s *db.Store, a oncecall.Action) (bool, error) {
	return p.b.restates(ctx, s, a)
}

// HasStanding reports whether the operation tells what became of its
// object (see Stander).
func (p *Prepared) HasStanding() bool { return p.b.hasStanding() }

// Standing tells whether a completed action's answer still holds (see
// Stander): "" when it does, or when the operation declares nothing.
func (p *Prepared) Standing(ctx context.Context, s *db.Store, a oncecall.Action) (string, error) {
	return p.b.standing(ctx, s, a)
}

// Steps lists the remote writes when the capability is remote: the writes
// before the required one (Befores), the required one (named by the
// capability), then the follow-ups whose capability is remote too. Only for
// a request with a Capability.
func (p *Prepared) Steps(remote idem.Remotes) ([]db.NewStep, error) { return p.b.steps(remote) }

// Confirmed turns the provider's record of the required write into the
// action's result.
func (p *Prepared) Confirmed(rec provider.Record) (idem.Result, error) { return p.b.confirmed(rec) }

// Settle records a remote action's outcome locally (see Settler); nothing
// when the operation has nothing to record.
func (p *Prepared) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, res idem.Result, providerRef string) error {
	return p.b.settle(ctx, tx, x, res, providerRef)
}

// Operation is a Spec with its input type erased.
type Operation interface {
	Name() string
	Label() string
	Tool() string
	Description() string
	PerCall() bool
	Phrases() Phrases
	// Input returns the zero value of the input struct (for schemas).
	Input() any
	// Prepare validates and normalises raw JSON arguments. path holds fields
	// taken from the URL (e.g. appointment_id); they must not also be in raw.
	Prepare(raw []byte, path map[string]string) (*Prepared, error)
	// PrepareCanonical is Prepare for arguments that are already canonical
	// JSON (see prepare_canonical.go): they are decoded as they are.
	PrepareCanonical(c []byte) (*Prepared, error)
	// PrepareCut is PrepareCanonical of c without its top-level member
	// named cut, whose value it returns: a tool call's arguments with their
	// action_id, read in one walk.
	PrepareCut(c []byte, cut string) (p *Prepared, cutValue []byte, err error)
}

// spec is a Spec with the optional interfaces its Logic and Remote
// implement found once, when it is defined.
type spec[In any] struct {
	s Spec[In]
	// enc writes the canonical input that the fingerprint hashes.
	enc *canon.Encoder

	executor    Executor[In]
	stater      Stater[In]
	resolver    Resolver[In]
	identifier  Identifier[In]
	remoteID    RemoteIdentifier[In]
	callScoper  CallScoper[In]
	restater    Restater[In]
	stander     Stander[In]
	byResource  ResourceStander
	befores     Befores[In]
	followUpper FollowUpper[In]
	localer     Localer[In]
	reserver    Reserver[In]
	settler     Settler[In]
}

// Define turns a Spec into an Operation. Its Logic must be an Executor or
// a Stater.
func Define[In any](s Spec[In]) Operation {
	o := &spec[In]{s: s, enc: canon.NewEncoder(reflect.TypeFor[In]())}
	o.executor, _ = s.Logic.(Executor[In])
	o.stater, _ = s.Logic.(Stater[In])
	if o.executor == nil && o.stater == nil {
		panic("op: " + s.Name + ": its Logic is neither an Executor nor a Stater")
	}
	o.resolver, _ = s.Logic.(Resolver[In])
	o.identifier, _ = s.Logic.(Identifier[In])
	o.remoteID, _ = s.Logic.(RemoteIdentifier[In])
	o.callScoper, _ = s.Logic.(CallScoper[In])
	o.restater, _ = s.Logic.(Restater[In])
	o.stander, _ = s.Logic.(Stander[In])
	o.byResource, _ = s.Logic.(ResourceStander)
	if s.Remote != nil {
		o.befores, _ = s.Remote.(Befores[In])
		o.followUpper, _ = s.Remote.(FollowUpper[In])
		o.localer, _ = s.Remote.(Localer[In])
		o.reserver, _ = s.Remote.(Reserver[In])
		o.settler, _ = s.Remote.(Settler[In])
	}
	return o
}

func (o *spec[In]) Name() string        { return o.s.Name }
func (o *spec[In]) Label() string       { return o.s.Label }
func (o *spec[In]) Tool() string        { return o.s.Tool }
func (o *spec[In]) Description() string { return o.s.Description }
func (o *spec[In]) PerCall() bool       { return o.s.PerCall }
func (o *spec[In]) Phrases() Phrases    { return o.s.Say }
func (o *spec[In]) Input() any          { var in In; return in }

func (o *spec[In]) Prepare(raw []byte, path map[string]string) (*Prepared, error) {
	var in In
	if len(path) > 0 {
		var err error
		if raw, err = withPath(raw, path); err != nil {
			return nil, err
		}
	}
	if err := Decode(raw, &in); err != nil {
		return nil, err
	}
	return o.prepare(in)
}

// prepare normalises a decoded input and builds its Prepared request.
func (o *spec[In]) prepare(in In) (*Prepared, error) {
	if err := o.s.Logic.Normalize(&in); err != nil {
		return nil, err
	}
	return o.build(in)
}

// build makes the Prepared request of a normalised input.
func (o *spec[In]) build(in In) (*Prepared, error) {
	input, err := o.enc.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode %s input: %w", o.s.Name, err)
	}
	p := &Prepared{
		Operation:   o.s.Name,
		Input:       input,
		Fingerprint: canon.Fingerprint(o.s.Name, o.s.Version, input),
		b:           &bound[In]{o: o, in: in},
	}
	if r := o.s.Remote; r != nil && (o.localer == nil || !o.localer.Local(in)) {
		p.Capability = r.Capability()
	}
	p.PerCall = o.s.PerCall || (o.callScoper != nil && o.callScoper.CallScoped(in))
	if o.remoteID != nil {
		p.RemoteIdentity = o.remoteID.RemoteIdentity(in)
	}
	if o.identifier != nil {
		p.Identity = o.identifier.Identity(in)
	} else {
		p.Identity = []string{string(input)}
	}
	return p, nil
}

// bound is an operation's logic bound to one normalised input: what a
// Prepared request runs.
type bound[In any] struct {
	o  *spec[In]
	in In
}

// OneStatement reports whether the operation is one statement (Stater).
func (b *bound[In]) OneStatement() bool { return b.o.stater != nil }

// Statement makes s the operation's one statement for this input.
func (b *bound[In]) Statement(s *db.Statement, x idem.Exec) { b.o.stater.Statement(s, x, b.in) }

// Run performs the operation's Go writes in the claim's transaction.
func (b *bound[In]) Run(ctx context.Context, tx *db.Tx, x idem.Exec) (idem.Result, error) {
	return b.o.executor.Execute(ctx, tx, x, b.in)
}

// Reserve runs the Reserver of a remote action in the claim's transaction
// and applies what it decided to the steps about to be recorded.
func (b *bound[In]) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, steps []db.NewStep) (*idem.Result, error) {
	if b.o.reserver == nil {
		return nil, nil
	}
	return reserve(ctx, tx, x, b.o.reserver, b.in, steps)
}

// remote reports whether the input's required write is a remote one (the
// operation declares a Remote, and the input is not served locally).
func (b *bound[In]) remote() bool {
	return b.o.s.Remote != nil && (b.o.localer == nil || !b.o.localer.Local(b.in))
}

func (b *bound[In]) resolve(ctx context.Context, s *db.Store, tenant uuid.UUID) (*Prepared, error) {
	if b.o.resolver == nil {
		return nil, nil
	}
	settled := b.in
	changed, err := b.o.resolver.Resolve(ctx, s, tenant, &settled)
	if err != nil || !changed {
		return nil, err
	}
	return b.o.build(settled)
}

func (b *bound[In]) restates(ctx context.Context, s *db.Store, a oncecall.Action) (bool, error) {
	if b.o.restater == nil || a.Operation != b.o.s.Name || a.State != oncecall.Completed {
		return false, nil
	}
	var stored In
	if Decode(a.Request, &stored) != nil {
		return false, nil // pruned: nothing to compare with
	}
	return b.o.restater.Restates(ctx, s, a.TenantID, stored, b.in)
}

func (b *bound[In]) hasStanding() bool { return b.o.stander != nil }

func (b *bound[In]) standing(ctx context.Context, s *db.Store, a oncecall.Action) (string, error) {
	if b.o.stander == nil || a.State != oncecall.Completed || a.Outcome != oncecall.Confirmed {
		return "", nil
	}
	return b.o.stander.Standing(ctx, s, a.TenantID, b.in, a.ResourceID)
}

func (b *bound[In]) steps(remote idem.Remotes) ([]db.NewStep, error) {
	return remoteSteps(b.o, b.in, remote)
}

func (b *bound[In]) confirmed(rec provider.Record) (idem.Result, error) {
	if !b.remote() {
		return Confirm(200, rec.ID, map[string]string{"id": rec.ID, "provider_ref": rec.ID})
	}
	return b.o.s.Remote.Confirmed(b.in, rec)
}

func (b *bound[In]) settle(ctx context.Context, tx *db.Tx, x idem.Exec, res idem.Result, providerRef string) error {
	if b.o.settler == nil || !b.remote() {
		return nil
	}
	return b.o.settler.Settle(ctx, tx, x, b.in, res, providerRef)
}

// Decode parses untrusted JSON into a struct strictly: it must be valid
// UTF-8 JSON without duplicate keys, an object, and carry no unknown fields
// (field names are exact: "Slot_id" is unknown, see CheckFieldNames); type
// mismatches name the field.
func Decode(raw []byte, v any) error {
	c, err := canon.Canonical(raw)
	if err != nil {
		return fault.Wrap(fault.InvalidJSON, err, err.Error())
	}
	return decodeCanonical(c, v)
}

// decodeCanonical is Decode of the canonical JSON c.
func decodeCanonical(c []byte, v any) error {
	if len(c) == 0 || c[0] != '{' {
		return fault.New(fault.InvalidJSON, "the request body must be a JSON object")
	}
	if err := CheckFieldNames(c, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(c))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fault.Field(typeErr.Field, "must be %s", jsonKind(typeErr.Type.Kind().String()))
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fault.Field(shorten(strings.Trim(name, `"`)), "is not a known field")
		}
		return fault.Wrap(fault.InvalidInput, err, "the request body does not match the operation's input")
	}
	return nil
}

// maxEchoedName bounds how much of an unknown field's name an error repeats:
// enough to find it, never a vehicle for sending large input back.
const maxEchoedName = 64

func shorten(name string) string { return Shorten(name, maxEchoedName) }

// Shorten cuts name to at most max bytes (at a character boundary, with an
// ellipsis) for an error that names an unknown field or variable.
func Shorten(name string, max int) string {
	if len(name) <= max {
		return name
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "an integer"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return "of another type"
}

// Family collects the operations of one family (a package) as they are
// defined: var Book = family.Add(op.Define(...)). A file that declares an
// operation is then all a family needs to offer it.
type Family struct{ ops []Operation }

// Add appends o to the family and returns it.
func (f *Family) Add(o Operation) Operation {
	f.ops = append(f.ops, o)
	return o
}

// Operations returns the family's operations, in the order they were
// added.
func (f *Family) Operations() []Operation { return append([]Operation(nil), f.ops...) }

// Registry holds the operations by name and by tool.
type Registry struct {
	byName map[string]Operation
	byTool map[string]Operation
}

// NewRegistry indexes ops; names and tools must be unique.
func NewRegistry(ops ...Operation) *Registry {
	r := &Registry{byName: map[string]Operation{}, byTool: map[string]Operation{}}
	for _, o := range ops {
		if _, dup := r.byName[o.Name()]; dup {
			panic("op: duplicate operation " + o.Name())
		}
		r.byName[o.Name()] = o
		if o.Tool() == "" {
			continue
		}
		if _, dup := r.byTool[o.Tool()]; dup {
			panic("op: duplicate tool " + o.Tool())
		}
		r.byTool[o.Tool()] = o
	}
	return r
}

// Get returns the operation named name.
func (r *Registry) Get(name string) (Operation, bool) { o, ok := r.byName[name]; return o, ok }

// ByTool returns the operation behind a Dasha tool.
func (r *Registry) ByTool(tool string) (Operation, bool) { o, ok := r.byTool[tool]; return o, ok }

// All returns the operations sorted by name.
func (r *Registry) All() []Operation {
	out := make([]Operation, 0, len(r.byName))
	for _, o := range r.byName {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// MustGet returns the operation named name or panics (wiring errors).
func (r *Registry) MustGet(name string) Operation {
	o, ok := r.Get(name)
	if !ok {
		panic("op: unknown operation " + name)
	}
	return o
}

// withPath adds URL fields to a JSON object body.
func withPath(raw []byte, path map[string]string) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	c, err := canon.Canonical(raw)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidJSON, err, err.Error())
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c, &m); err != nil {
		return nil, fault.New(fault.InvalidJSON, "the request body must be a JSON object")
	}
	for k, v := range path {
		if _, dup := m[k]; dup {
			return nil, fault.Field(k, "is taken from the URL and must not be in the body")
		}
		m[k], _ = json.Marshal(v)
	}
	return json.Marshal(m)
}

// reserve runs r.Reserve and applies its payload to the required step.
func reserve[In any](ctx context.Context, tx *db.Tx, x idem.Exec, r Reserver[In], in In, steps []db.NewStep) (*idem.Result, error) {
	res, err := r.Reserve(ctx, tx, x, in)
	if res.Done != nil && err == nil {
		return res.Done, nil
	}
	if err != nil || res.Reject != nil {
		return res.Reject, err
	}
	for i := range steps {
		f := &steps[i]
		if f.Required {
			if res.Provider.Kind != "" {
				f.ProviderKind, f.ProviderAccount = res.Provider.Kind, res.Provider.Account
			}
			if res.Payload != nil {
				payload, err := json.Marshal(res.Payload)
				if err != nil {
					return nil, err
				}
				f.Payload = payload
			}
			continue
		}
		if p, ok := res.FollowUps[f.Name]; ok {
			payload, err := json.Marshal(p)
			if err != nil {
				return nil, err
			}
			f.Payload = payload
		}
	}
	return nil, nil
}

// remoteSteps lists the remote writes of one request. Provider keys and
// external references are filled in by the core once the action id exists.
func remoteSteps[In any](o *spec[In], in In, remote idem.Remotes) ([]db.NewStep, error) {
	r, operation := o.s.Remote, o.s.Name
	payload, err := json.Marshal(r.Payload(in))
	if err != nil {
		return nil, err
	}
	var steps []db.NewStep
	if o.befores != nil {
		for _, f := range o.befores.Before(in) {
			payload, err := json.Marshal(f.Payload)
			if err != nil {
				return nil, err
			}
			steps = append(steps, db.NewStep{Name: f.Name, Capability: f.Capability, Operation: f.Operation, Payload: payload})
		}
	}
	capability := r.Capability()
	steps = append(steps, db.NewStep{Name: capability, Capability: capability, Required: true, Operation: operation, Payload: payload})
	if o.followUpper == nil {
		return steps, nil
	}
	for _, f := range o.followUpper.FollowUps(in) {
		if remote == nil || !remote.Remote(f.Capability) {
			continue
		}
		payload, err := json.Marshal(f.Payload)
		if err != nil {
			return nil, err
		}
		steps = append(steps, db.NewStep{Name: f.Name, Capability: f.Capability, Operation: f.Operation, Payload: payload})
	}
	return steps, nil
}

// standingByResource is Standing of a completed, confirmed action whose
// request was pruned (see ResourceStander).
func (o *spec[In]) standingByResource(ctx context.Context, s *db.Store, a oncecall.Action) (string, error) {
	if o.byResource == nil || a.State != oncecall.Completed || a.Outcome != oncecall.Confirmed {
		return "", nil
	}
	return o.byResource.StandingByResource(ctx, s, a.TenantID, a.ResourceID)
}
