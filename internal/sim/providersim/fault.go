package providersim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fault names, as written in X-Sim-Fault and POST /control/faults.
const (
	FaultDropResponse     = "drop_response"
	FaultFailBeforeCommit = "fail_before_commit"
	FaultFailAfterCommit  = "fail_after_commit"
	FaultDelay            = "delay"
	FaultIgnoreKeys       = "ignore_keys"
	FaultLookupLag        = "lookup_lag"
	FaultDown             = "down"
	FaultReject           = "reject"
	// FaultPending: the write is accepted and decided (committed) after
	// the duration, as a provider that confirms later by webhook does.
	FaultPending = "pending"
)

// faults is the set of faults in effect for one request.
type faults struct {
	drop, failBefore, failAfter, ignoreKeys, down bool
	delay, lookupLag, pending                     time.Duration
	reject                                        string
}

var rejectCode = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// parseFaults parses "fault[;fault...]", e.g. "drop_response;delay=200ms".
func parseFaults(s string) (faults, error) {
	var f faults
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		one, err := parseFault(part)
		if err != nil {
			return faults{}, err
		}
		f = f.merge(one)
	}
	return f, nil
}

// parseFault parses one fault: a name, or name=value for delay, lookup_lag
// and reject.
func parseFault(s string) (faults, error) {
	name, value, hasValue := strings.Cut(strings.TrimSpace(s), "=")
	var f faults
	duration := func() (time.Duration, error) {
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 || d > time.Hour {
			return 0, fmt.Errorf("fault %s needs a duration between 0 and 1h, e.g. %s=250ms", name, name)
		}
		return d, nil
	}
	if hasValue != slices.Contains([]string{FaultDelay, FaultLookupLag, FaultReject, FaultPending}, name) {
		if hasValue {
			return faults{}, fmt.Errorf("fault %s takes no value", name)
		}
		return faults{}, fmt.Errorf("fault %s needs a value (%s=...)", name, name)
	}
	var err error
	switch name {
	case FaultDropResponse:
		f.drop = true
	case FaultFailBeforeCommit:
		f.failBefore = true
	case FaultFailAfterCommit:
		f.failAfter = true
	case FaultIgnoreKeys:
		f.ignoreKeys = true
	case FaultDown:
		f.down = true
	case FaultDelay:
		f.delay, err = duration()
	case FaultLookupLag:
		f.lookupLag, err = duration()
	case FaultPending:
		f.pending, err = duration()
		if err == nil && f.pending == 0 {
			err = errors.New("fault pending needs a positive duration, e.g. pending=2s")
		}
	case FaultReject:
		if !rejectCode.MatchString(value) {
			err = errors.New("fault reject needs an upper-case code, e.g. reject=CARD_EXPIRED")
		}
		f.reject = value
	default:
		err = fmt.Errorf("unknown fault %q (known: drop_response, fail_before_commit, fail_after_commit, delay=D, ignore_keys, lookup_lag=D, down, reject=CODE, pending=D)", name)
	}
	return f, err
}

func (f faults) merge(o faults) faults {
	f.drop = f.drop || o.drop
	f.failBefore = f.failBefore || o.failBefore
	f.failAfter = f.failAfter || o.failAfter
	f.ignoreKeys = f.ignoreKeys || o.ignoreKeys
	f.down = f.down || o.down
	f.delay = max(f.delay, o.delay)
	f.lookupLag = max(f.lookupLag, o.lookupLag)
	f.pending = max(f.pending, o.pending)
	if f.reject == "" {
		f.reject = o.reject
	}
	return f
}

// names lists the faults in effect, for the access log.
func (f faults) names() []string {
	var n []string
	for _, b := range []struct {
		on   bool
		name string
	}{
		{f.down, FaultDown}, {f.delay > 0, FaultDelay}, {f.ignoreKeys, FaultIgnoreKeys},
		{f.failBefore, FaultFailBeforeCommit}, {f.reject != "", FaultReject},
		{f.failAfter, FaultFailAfterCommit}, {f.drop, FaultDropResponse}, {f.lookupLag > 0, FaultLookupLag},
		{f.pending > 0, FaultPending},
	} {
		if b.on {
			n = append(n, b.name)
		}
	}
	return n
}

// Request kinds a fault can apply to (a rule's "on").
const (
	OnWrite  = "write"
	OnLookup = "lookup"
	OnAny    = "any"
	// OnCapture: the Stripe mode's captures (its other POSTs are writes).
	OnCapture = "capture"
)

// check rejects faults that mean nothing for a kind of request: a lookup
// cannot ignore keys or be rejected.
func (f faults) check(kind string) error {
	if kind == OnWrite || kind == OnCapture {
		return nil
	}
	if f.ignoreKeys {
		return errors.New("fault ignore_keys applies to writes only")
	}
	if f.reject != "" {
		return errors.New("fault reject applies to writes only")
	}
	if f.pending > 0 {
		return errors.New("fault pending applies to writes only")
	}
	return nil
}

// Rule is a fault set through the control endpoint.
type Rule struct {
	ID int64 `json:"id"`
	// Capability is one capability or "*" for all.
	Capability string `json:"capability"`
	// Fault is one fault, e.g. "drop_response" or "delay=2s".
	Fault string `json:"fault"`
	// Count is how many matching requests the rule applies to; 0 means
	// until cleared.
	Count int `json:"count"`
	// Probability (0..1) that a matching request gets the fault; omitted
	// means always. Requests that do not get it do not use up Count.
	Probability *float64 `json:"probability,omitempty"`
	// On is the kind of request the rule applies to: "write", "lookup" or
	// "any". Default: "lookup" for lookup_lag, "write" for the others.
	On string `json:"on,omitempty"`
	// Applied counts the requests the rule has applied to so far.
	Applied int `json:"applied"`

	parsed faults
}

// rules holds the control-endpoint faults.
type rules struct {
	mu     sync.Mutex
	nextID int64
	list   []*Rule
}

func (rs *rules) add(r Rule) (Rule, error) {
	if r.Capability != "*" && !isCapability(r.Capability) {
		return Rule{}, fmt.Errorf("capability must be one of %s, or *", capabilityList)
	}
	if strings.Contains(r.Fault, ";") {
		return Rule{}, errors.New("one fault per rule")
	}
	parsed, err := parseFault(r.Fault)
	if err != nil {
		return Rule{}, err
	}
	if r.On == "" {
		r.On = OnWrite
		if parsed.lookupLag > 0 {
			r.On = OnLookup
		}
	}
	if r.On != OnWrite && r.On != OnLookup && r.On != OnAny && r.On != OnCapture {
		return Rule{}, errors.New(`on must be "write", "lookup", "capture" or "any"`)
	}
	if err := parsed.check(r.On); err != nil {
		return Rule{}, err
	}
	if r.Count < 0 {
		return Rule{}, errors.New("count must be 0 (until cleared) or more")
	}
	if p := r.Probability; p != nil && (*p < 0 || *p > 1) {
		return Rule{}, errors.New("probability must be between 0 and 1")
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.nextID++
	r.ID, r.Applied, r.parsed = rs.nextID, 0, parsed
	rs.list = append(rs.list, &r)
	return r, nil
}

// take returns the faults of the rules that apply to one request, using up
// their counts.
func (rs *rules) take(capability, kind string) faults {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var f faults
	kept := rs.list[:0]
	for _, r := range rs.list {
		if (r.Capability == "*" || r.Capability == capability) && (r.On == OnAny || r.On == kind) &&
			(r.Probability == nil || rand.Float64() < *r.Probability) {
			f = f.merge(r.parsed)
			r.Applied++
			if r.Count > 0 && r.Applied >= r.Count {
				continue
			}
		}
		kept = append(kept, r)
	}
	clear(rs.list[len(kept):])
	rs.list = kept
	return f
}

func (rs *rules) all() []Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]Rule, 0, len(rs.list))
	for _, r := range rs.list {
		out = append(out, *r)
	}
	return out
}

// remove deletes one rule (id > 0) or all of them; it reports whether any was removed.
func (rs *rules) remove(id int64) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if id == 0 {
		n := len(rs.list)
		rs.list = nil
		return n > 0
	}
	for i, r := range rs.list {
		if r.ID == id {
			rs.list = slices.Delete(rs.list, i, i+1)
			return true
		}
	}
	return false
}
