package idem

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
)

// Result is what an operation's execution produced.
type Result struct {
	Outcome Outcome // Confirmed or Rejected
	// Status is the HTTP status of the answer (201, 200; 422 for rejections).
	Status int
	// Reason is the rejection code (e.g. SLOT_UNAVAILABLE); empty when confirmed.
	Reason string
	// ResourceID identifies the created or changed resource; kept with the
	// compact action after the body is pruned.
	ResourceID string
	// Body is the JSON of the resource, or the details of a rejection.
	Body []byte
}

// Exec is what an operation's execution knows about its action.
type Exec struct {
	TenantID uuid.UUID
	ActionID uuid.UUID
	// CallPlatform and CallID are the voice call the action was claimed in
	// (see oncecall.Action); empty outside one.
	CallPlatform string
	CallID       string
	// Remotes tells which capabilities are served by a remote provider
	// (nil: none is): a local operation's follow-up on a remote capability
	// (a booking's confirmation message) is recorded as a step of the
	// action, which the driver sends. See IsRemote.
	Remotes Remotes
	// Offer, when set, keeps of a remote action's candidate slots those
	// the tenant's calendars show free by their latest read (see
	// Request.Offer); nil: nothing is read but oncecall's own records.
	Offer Offerer
}

// IsRemote reports whether capability is served by a remote provider.
func (x Exec) IsRemote(capability string) bool {
	return x.Remotes != nil && x.Remotes.Remote(capability)
}

// Remotes tells which capabilities are served by a remote provider (the
// step driver does).
type Remotes interface {
	Remote(capability string) bool
}

// Offerer keeps of candidate slots those a tenant's calendars show free.
type Offerer interface {
	Offered(ctx context.Context, slots []oncecall.OpenSlot) ([]oncecall.OpenSlot, error)
}

// Work is an operation's writes bound to one request's input (op.Prepared
// makes it): one statement, or Go in the claim's transaction, and the local
// checks of a remote action.
type Work interface {
	// OneStatement reports whether the operation is one statement: then
	// Statement is used, otherwise Run.
	OneStatement() bool
	// Statement makes s the operation's one statement (see
	// op.Stater): claim, writes and completion in one round trip.
	Statement(s *db.Statement, x Exec)
	// Run performs the operation's writes inside the claim's transaction.
	Run(ctx context.Context, tx *db.Tx, x Exec) (Result, error)
	// Reserve runs in a remote action's claim transaction before its steps
	// are recorded (local checks and holds) and may set their payloads; a
	// result from it is a definitive answer that completes the action with
	// nothing sent.
	Reserve(ctx context.Context, tx *db.Tx, x Exec, steps []db.NewStep) (*Result, error)
}

// Staleness tells whether the answer of a completed action no longer
// holds.
type Staleness interface {
	Stale(ctx context.Context, a oncecall.Action) (bool, error)
}

// Request is one attempt at an action.
type Request struct {
	TenantID    uuid.UUID
	Key         string
	Operation   string
	Fingerprint string
	// Input is the normalised request, kept with the action.
	Input []byte
	// Wait bounds how long to wait for an attempt of the same action that is
	// still running before answering ErrInProgress.
	Wait time.Duration
	// Work is the operation's writes bound to this request's input: Run
	// or Statement for a local action, Reserve for a remote one.
	Work Work
	// Steps, when set, makes the action remote: the steps and their
	// provider keys are committed with the claim, before any dispatch, and
	// the Driver performs them; Work.Run is not called.
	Steps []db.NewStep
	// Stale, when set, reports whether the answer of a completed action
	// under Key no longer holds. Only keys derived from identity fields set
	// it: such a key names an intent ("this customer in this slot"), so
	// once its answer stops being true the same request is a new action.
	// The key is then retired from the old action and claimed anew. It is
	// not asked about a rejection of the same request (operation and
	// fingerprint) recorded less than Config.RejectionHold ago: that
	// rejection is the request's answer.
	Stale Staleness
	// CallPlatform and CallID are the voice call of a tool call (its
	// platform, and the platform's id of the call), kept with the action.
	CallPlatform string
	CallID       string
	// Named, when set, is the action the request names (a tool call's
	// action_id): the request is answered for that action only, read by
	// its id, never by Key, which a concurrent request may have retired
	// from it (Stale) and claimed for a new action meanwhile. Nothing is
	// claimed. Key is then the action's key.
	Named uuid.UUID
	// Offer, when set, is given to Reserve (Exec.Offer): what the
	// tenant's calendars show free, read through their short cache, so
	// that a booking by service picks a practitioner the calendar has
	// room for. It is asked only when Reserve runs, in the claim's
	// transaction: once per action, never for a replay.
	Offer Offerer
	// Gate, when set, is asked before the request performs anything (see
	// Gate): its refusal is Do's error, with nothing claimed. A request
	// with a gate always reads its key's action first, since only that
	// read tells a replay, which needs no admission, from a new action.
	Gate Gate
	// Place, when set, is the request's place in a share of the database
	// pool its caller rations (the API's per-tenant gate), held when Do is
	// called. It is freed while the request waits for a running attempt of
	// its action (see Core.await).
	Place Place
}

// Place is a request's place in a share of the database pool.
type Place interface {
	// Free gives the place up; the request keeps none of its connections
	// meanwhile.
	Free()
	// Take gets the place back before the request uses the database
	// again. Its error ends the request, which has then claimed nothing.
	Take(ctx context.Context) error
}

// made reports whether a is the action of a request like req (the same
// operation and fingerprint); another action under req's key means the key
// was reused.
func (req *Request) made(a oncecall.Action) bool {
	return a.Operation == req.Operation && a.Fingerprint == req.Fingerprint
}

// Driver performs the remote steps of a claimed action and returns the
// action as it then stands (completed, or unknown when a provider's answer
// was lost). owner is the token of the lease the claim took.
type Driver interface {
	Drive(ctx context.Context, a oncecall.Action, owner uuid.UUID) (oncecall.Action, error)
}

// Reply is the action the request maps to.
type Reply struct {
	Action oncecall.Action
	// Replayed is true when the action was not executed by this request.
	Replayed bool
	// Kept is true when the replay was answered from the answers this
	// process keeps in memory, without the database.
	Kept bool
}
