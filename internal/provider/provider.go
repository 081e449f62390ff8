// Package provider describes the systems that own a step's write: the
// capabilities oncecall writes to (calendar, payments, messaging, crm), what
// each provider promises (idempotency keys, their retention, lookup lag), and
// how a failed call is classified. Only this classification decides whether a
// write may be sent again.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Capabilities a provider can serve.
const (
	Calendar  = "calendar"
	Payments  = "payments"
	Messaging = "messaging"
	CRM       = "crm"
)

// Capabilities lists every capability.
var Capabilities = []string{Calendar, Payments, Messaging, CRM}

// Holds is the payments provider's hold at approval time: a payment intent
// approved while a provider serves it reserves the amount on the card there
// (Stripe: a PaymentIntent with manual capture), and its charge captures the
// hold. It is not configured on its own: the adapter that serves payments
// and can hold (stripe) serves it too.
const Holds = "payment_holds"

// Links is the payments provider's payment links: a page where the customer
// pays (Stripe: a Checkout Session), sent to them by SMS, whose outcome is
// decided when they pay or the link expires. Like Holds it is not
// configured on its own: the adapter that serves payments and can make
// links (stripe) serves it too.
const Links = "payment_links"

// Write is one downstream write.
type Write struct {
	Capability string
	// Key is the step's provider key: derived from the action id and the
	// step name, committed before the first dispatch, reused forever after.
	Key string
	// ExternalRef is a unique business reference a provider can be searched
	// by when it does not honour keys.
	ExternalRef string
	Operation   string
	Payload     json.RawMessage
}

// Record is what a provider holds for a write.
type Record struct {
	ID          string `json:"id"`
	ExternalRef string `json:"external_ref,omitempty"`
	Status      string `json:"status,omitempty"`
	// Code is the rejection code when Status is "rejected".
	Code string `json:"code,omitempty"`
	// Until, when set, is how long the provider keeps the write open: a
	// hold's capture deadline, after which it is released uncaptured.
	Until time.Time `json:"until,omitzero"`
	// Data is what the write gave back that a later step of the same
	// action uses (a Checkout Session's id and URL): a step's payload
	// names it as {{step:<name>.<field>}} (see docs/providers.md).
	Data map[string]string `json:"data,omitempty"`
}

// Traits is what a provider promises; recovery relies on nothing else.
type Traits struct {
	// HonoursKeys: a write re-sent with the same key within KeyRetention is
	// performed at most once.
	HonoursKeys bool
	// KeyRetention is how long the provider remembers keys.
	KeyRetention time.Duration
	// VisibilityDelay is how long after a write lookups may still miss it.
	VisibilityDelay time.Duration
	// AuthoritativeLookup: past VisibilityDelay, "not found" means the write
	// does not exist.
	AuthoritativeLookup bool
	// Timeout bounds one call to the provider: a write is in flight for at
	// most this long after it was sent. Default DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds a provider call when Traits.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// CallTimeout is how long one call may take.
func (t Traits) CallTimeout() time.Duration {
	if t.Timeout <= 0 {
		return DefaultTimeout
	}
	return t.Timeout
}

// Provider performs and looks up writes for one capability.
type Provider interface {
	Traits() Traits
	// Write performs w. Its error is a *Rejected, or wraps ErrNotSent or
	// ErrAmbiguous.
	Write(ctx context.Context, w Write) (Record, error)
	// LookupByKey finds the write made with a provider key.
	LookupByKey(ctx context.Context, capability, key string) (Record, bool, error)
	// LookupByRef finds writes by external reference.
	LookupByRef(ctx context.Context, capability, ref string) ([]Record, error)
}

// WriteLookup is implemented by providers whose lookups need what the write
// carried (the account it was made on, the object it changed): the driver
// then looks a step up with the whole write instead of LookupByKey or
// LookupByRef.
type WriteLookup interface {
	LookupWrite(ctx context.Context, w Write) (Record, bool, error)
}

// Rejected is a definitive business rejection: the write was not performed
// and will not be by retrying it.
type Rejected struct {
	Code    string
	Message string
}

func (r *Rejected) Error() string { return fmt.Sprintf("rejected by provider: %s", r.Code) }

var (
	// ErrNotSent: the request never left (connection refused before any byte
	// was written): sending it again is safe.
	ErrNotSent = errors.New("provider call not sent")
	// ErrAmbiguous: the request may have been performed (timeout, 5xx, reset
	// after sending): the outcome is unknown until evidence says otherwise.
	ErrAmbiguous = errors.New("provider outcome unknown")
	// ErrKeyConflict: the provider holds another write under the key. No
	// re-send can change that; an operator decides.
	ErrKeyConflict = errors.New("provider holds another write under the key")
	// ErrWaiting: the write's outcome is decided by someone other than
	// oncecall, later (a customer who has not paid a payment link yet). The
	// step is checked again with backoff, and a provider's signed notice
	// makes it due at once; waiting never counts towards the operator.
	ErrWaiting = errors.New("provider outcome not decided yet")
	// ErrConflict: the provider holds, where this write would be, one that
	// does not match it (a PaymentIntent captured for another amount than
	// the charge's, or by no charge of oncecall's): no re-send can change
	// that, and nothing says whether this write was made. An operator
	// decides.
	ErrConflict = errors.New("the provider's evidence does not match the write")
	// ErrLookalike: a lookup found a write that may be this one but that
	// nothing shows is, or is not (a message to the same recipient from the
	// same sender since the claim, whose text the provider rewrote). It is
	// no evidence either way: the write is not sent again, the step stays
	// unknown, and it goes to an operator once its checks run out.
	ErrLookalike = errors.New("the provider holds a write that may be this one")
)

// Classify names the class of a Write error: "rejected", "not_sent",
// "key_conflict", "conflict", "waiting" or "ambiguous" (anything
// unrecognised is ambiguous: never assume a failure).
func Classify(err error) string {
	var rej *Rejected
	switch {
	case errors.As(err, &rej):
		return "rejected"
	case errors.Is(err, ErrNotSent):
		return "not_sent"
	case errors.Is(err, ErrKeyConflict):
		return "key_conflict"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrWaiting):
		return "waiting"
	}
	return "ambiguous"
}

// Set maps capabilities to remote providers; a capability absent from the
// set is served by the local provider (oncecall's own tables).
type Set map[string]Provider

// Remote returns the remote provider of a capability, if one is configured.
func (s Set) Remote(capability string) (Provider, bool) {
	p, ok := s[capability]
	return p, ok && p != nil
}

// Identity names a provider a step is sent to: its kind (http, stripe,
// twilio, local, ...) and the account it is reached on (the http
// provider's base URL, a Stripe account, a Twilio account SID). Never a
// secret: it is stored with every step, and a server drives a step only
// when one of its providers has the step's identity.
type Identity struct {
	Kind    string
	Account string
}

// LocalKind is the kind of the local provider (oncecall's own tables).
const LocalKind = "local"

// Identified is implemented by providers that name themselves.
type Identified interface {
	Identity() Identity
}

// IdentityOf is p's Identity, or, for a provider that does not name
// itself (a test's), its Go type.
func IdentityOf(p Provider) Identity {
	if id, ok := p.(Identified); ok {
		return id.Identity()
	}
	return Identity{Kind: fmt.Sprintf("%T", p)}
}

// Finder is a provider without idempotency keys whose writes are found by
// what they carry (a recipient, a text, a time) rather than by a reference
// of oncecall's. The driver asks it instead of LookupByRef. Find reports
// not found only as positive evidence of absence (a complete reading with
// nothing there that could be the write); a write that may be this one
// but cannot be shown to be is ErrLookalike.
type Finder interface {
	Find(ctx context.Context, q Query) (Record, bool, error)
}

// Query describes a write to find.
type Query struct {
	// Write is the write as it was sent.
	Write Write
	// ProviderRef is the provider's id of the write when something (a
	// signed notice) named it: it is checked first.
	ProviderRef string
	// Since is when the write could have been sent first (its action's
	// claim); nothing older is it.
	Since time.Time
	// Taken reports whether a provider id is already another write's: a
	// match that is taken is not this write.
	Taken func(ctx context.Context, id string) (bool, error)
}

// Accounts reaches providers that a process's configuration does not list
// but stores with a tenant (a tenant's own calendar: its connection is in
// oncecall's database, its secret where this server reads it). A step
// planned for one of them names it by Identity; a server drives the step
// only when Reach finds it here.
type Accounts interface {
	// Reach returns the provider of capability at id; false when this
	// process cannot reach it (no such account, or its credentials are not
	// readable here).
	Reach(ctx context.Context, capability string, id Identity) (Provider, bool, error)
	// Reachable lists the accounts this process can reach, by capability.
	Reachable(ctx context.Context) ([]Reached, error)
}

// Reached is an account a process can reach for a capability.
type Reached struct {
	Capability string
	Identity
}
