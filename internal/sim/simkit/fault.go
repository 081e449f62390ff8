// Package simkit is what the calendar simulators (internal/sim/googlecal,
// msgraph, calcom) share: the faults they inject and the rules that set
// them, the control endpoint, and a server that tells where it listens.
// The simulators are test harnesses, apart from oncecall's own code.
package simkit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fault names, as written in X-Sim-Fault and POST /sim/faults.
const (
	FaultDropResponse     = "drop_response"
	FaultFailBeforeCommit = "fail_before_commit"
	FaultFailAfterCommit  = "fail_after_commit"
	FaultDelay            = "delay"
	FaultLookupLag        = "lookup_lag"
	FaultDown             = "down"
	// FaultCollisionUndetected (Google): an insert of an id already taken
	// is answered 200 with the event as sent, as if created; the calendar
	// keeps the event it had.
	FaultCollisionUndetected = "collision_undetected"
)

// Kinds of request a rule applies to.
const (
	OnWrite = "write"
	OnRead  = "read"
	OnAny   = "any"
)

// Faults is the set of faults in effect for one request.
type Faults struct {
	Drop, FailBefore, FailAfter, Down, Collision bool
	Delay, LookupLag                             time.Duration
}

// ParseFaults parses "fault[;fault...]", e.g. "drop_response;delay=200ms".
func ParseFaults(s string) (Faults, error) {
	var f Faults
	for part := range strings.SplitSeq(s, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		one, err := parseFault(part)
		if err != nil {
			return Faults{}, err
		}
		f = f.merge(one)
	}
	return f, nil
}

func parseFault(s string) (Faults, error) {
	name, value, hasValue := strings.Cut(strings.TrimSpace(s), "=")
	var f Faults
	if hasValue != (name == FaultDelay || name == FaultLookupLag) {
		if hasValue {
			return Faults{}, fmt.Errorf("fault %s takes no value", name)
		}
		return Faults{}, fmt.Errorf("fault %s needs a duration (%s=250ms)", name, name)
	}
	duration := func() (time.Duration, error) {
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 || d > time.Hour {
			return 0, fmt.Errorf("fault %s needs a duration between 0 and 1h, e.g. %s=250ms", name, name)
		}
		return d, nil
	}
	var err error
	switch name {
	case FaultDropResponse:
		f.Drop = true
	case FaultFailBeforeCommit:
		f.FailBefore = true
	case FaultFailAfterCommit:
		f.FailAfter = true
	case FaultDown:
		f.Down = true
	case FaultCollisionUndetected:
		f.Collision = true
	case FaultDelay:
		f.Delay, err = duration()
	case FaultLookupLag:
		f.LookupLag, err = duration()
	default:
		err = fmt.Errorf("unknown fault %q (known: drop_response, fail_before_commit, fail_after_commit, delay=D, lookup_lag=D, down, collision_undetected)", name)
	}
	return f, err
}

func (f Faults) merge(o Faults) Faults {
	f.Drop = f.Drop || o.Drop
	f.FailBefore = f.FailBefore || o.FailBefore
	f.FailAfter = f.FailAfter || o.FailAfter
	f.Down = f.Down || o.Down
	f.Collision = f.Collision || o.Collision
	f.Delay = max(f.Delay, o.Delay)
	f.LookupLag = max(f.LookupLag, o.LookupLag)
	return f
}

// Names lists the faults in effect, for the access log.
func (f Faults) Names() []string {
	var n []string
	for _, b := range []struct {
		on   bool
		name string
	}{
		{f.Down, FaultDown}, {f.Delay > 0, FaultDelay}, {f.FailBefore, FaultFailBeforeCommit},
		{f.Collision, FaultCollisionUndetected}, {f.FailAfter, FaultFailAfterCommit},
		{f.Drop, FaultDropResponse}, {f.LookupLag > 0, FaultLookupLag},
	} {
		if b.on {
			n = append(n, b.name)
		}
	}
	return n
}

// Rule is a fault set through the control endpoint.
type Rule struct {
	ID int64 `json:"id"`
	// Fault is one fault, e.g. "drop_response" or "delay=2s".
	Fault string `json:"fault"`
	// Count is how many matching requests the rule applies to; 0 means
	// until cleared.
	Count int `json:"count"`
	// Probability (0..1) that a matching request gets the fault; omitted
	// means always. Requests that do not get it do not use up Count.
	Probability *float64 `json:"probability,omitempty"`
	// On is the kind of request: "write", "read" or "any". Default "read"
	// for lookup_lag, "write" for the others.
	On string `json:"on,omitempty"`
	// Applied counts the requests the rule has applied to.
	Applied int `json:"applied"`

	parsed Faults
}

// Rules holds the control-endpoint faults.
type Rules struct {
	mu     sync.Mutex
	nextID int64
	list   []*Rule
}

// Add checks and adds a rule.
func (rs *Rules) Add(r Rule) (Rule, error) {
	if strings.Contains(r.Fault, ";") {
		return Rule{}, errors.New("one fault per rule")
	}
	parsed, err := parseFault(r.Fault)
	if err != nil {
		return Rule{}, err
	}
	if r.On == "" {
		r.On = OnWrite
		if parsed.LookupLag > 0 {
			r.On = OnRead
		}
	}
	switch {
	case r.On != OnWrite && r.On != OnRead && r.On != OnAny:
		return Rule{}, errors.New(`on must be "write", "read" or "any"`)
	case r.Count < 0:
		return Rule{}, errors.New("count must be 0 (until cleared) or more")
	case r.Probability != nil && (*r.Probability < 0 || *r.Probability > 1):
		return Rule{}, errors.New("probability must be between 0 and 1")
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.nextID++
	r.ID, r.Applied, r.parsed = rs.nextID, 0, parsed
	rs.list = append(rs.list, &r)
	return r, nil
}

// Take returns the faults of the rules that apply to one request of kind,
// using up their counts.
func (rs *Rules) Take(kind string) Faults {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var f Faults
	kept := rs.list[:0]
	for _, r := range rs.list {
		if (r.On == OnAny || r.On == kind) && (r.Probability == nil || rand.Float64() < *r.Probability) {
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

// All lists the rules in effect.
func (rs *Rules) All() []Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]Rule, 0, len(rs.list))
	for _, r := range rs.list {
		out = append(out, *r)
	}
	return out
}

// Remove deletes one rule (id > 0) or all; it reports whether any was.
func (rs *Rules) Remove(id int64) bool {
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
