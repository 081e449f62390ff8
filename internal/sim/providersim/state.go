package providersim

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

type capKey struct{ capability, key string }
type capRef struct{ capability, ref string }

// state is the simulator's memory: every stored write, indexed by key,
// external reference and calendar slot, rebuilt from the ledger at start.
// One mutex orders everything, so the file and memory agree on the order.
type state struct {
	mu       sync.Mutex
	file     *ledgerFile // nil keeps the ledger in memory only
	writes   []*Write
	byKey    map[capKey][]*Write
	byRef    map[capRef][]*Write
	slots    map[string]*Write
	events   map[string]*calEvent
	hits     map[capKey]int
	inflight map[capKey]bool
	closed   bool
}

func newState(file *ledgerFile, events []event) *state {
	st := &state{
		file:     file,
		byKey:    map[capKey][]*Write{},
		byRef:    map[capRef][]*Write{},
		slots:    map[string]*Write{},
		events:   map[string]*calEvent{},
		hits:     map[capKey]int{},
		inflight: map[capKey]bool{},
	}
	for _, ev := range events {
		st.apply(ev)
	}
	return st
}

// apply adds an event to memory; it must already be durable.
func (st *state) apply(ev event) {
	if ev.Event == "hit" {
		st.hits[capKey{ev.Capability, ev.Key}]++
		return
	}
	w := ev.Write
	st.writes = append(st.writes, w)
	if w.Key != "" {
		ck := capKey{w.Capability, w.Key}
		st.byKey[ck] = append(st.byKey[ck], w)
		st.hits[ck]++
	}
	cr := capRef{w.Capability, w.ExternalRef}
	st.byRef[cr] = append(st.byRef[cr], w)
	st.applyCalendar(w)
	if slot := slotOf(w); slot != "" && w.Status != StatusRejected {
		if _, taken := st.slots[slot]; !taken {
			st.slots[slot] = w
		}
	}
}

// record makes an event durable, then applies it.
func (st *state) record(ev event) error {
	if st.closed {
		return errors.New("the simulator is shutting down")
	}
	if st.file != nil {
		if err := st.file.append(ev); err != nil {
			return err
		}
	}
	st.apply(ev)
	return nil
}

// writeRequest is a decoded POST /{capability}/writes.
type writeRequest struct {
	capability  string
	key         string
	externalRef string
	operation   string
	payload     json.RawMessage
	fields      map[string]any
}

// sameAs reports whether a stored write answers the same request: same
// operation, external reference and payload (compared as JSON values).
func (req writeRequest) sameAs(w *Write) bool {
	if req.operation != w.Operation || req.externalRef != w.ExternalRef {
		return false
	}
	var stored map[string]any
	if err := decodeNumbers(w.Payload, &stored); err != nil {
		return false
	}
	return reflect.DeepEqual(req.fields, stored)
}

func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// claimResult is what the simulator knows about a key when a write arrives.
type claimResult int

const (
	claimNew      claimResult = iota // no honoured write: this request performs it
	claimReplay                      // an honoured write exists and matches
	claimMismatch                    // an honoured write exists for another request
	claimInFlight                    // another request with the key is being processed
)

// claim decides what a write request does. With honour it looks for a write
// stored under the key within retention and otherwise marks the key in
// flight (release it with commit or release). Requests that create nothing
// are counted on the key.
func (st *state) claim(req writeRequest, honour bool, now time.Time, retention time.Duration) (claimResult, *Write, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !honour {
		return claimNew, nil, nil
	}
	ck := capKey{req.capability, req.key}
	if st.inflight[ck] {
		return claimInFlight, nil, st.hit(ck, now)
	}
	if w := st.honoured(ck, now, retention); w != nil {
		if !req.sameAs(w) {
			return claimMismatch, w, st.hit(ck, now)
		}
		return claimReplay, w, st.hit(ck, now)
	}
	st.inflight[ck] = true
	return claimNew, nil, nil
}

// honoured is the first write stored under the key that is still within
// the key-retention window.
func (st *state) honoured(ck capKey, now time.Time, retention time.Duration) *Write {
	for _, w := range st.byKey[ck] {
		if now.Sub(w.CreatedAt) < retention {
			return w
		}
	}
	return nil
}

// hit durably counts one write request on a key that created nothing.
func (st *state) hit(ck capKey, now time.Time) error {
	if ck.key == "" {
		return nil
	}
	return st.record(event{Event: "hit", Capability: ck.capability, Key: ck.key, At: now})
}

// release ends a claim that wrote nothing and counts the request.
func (st *state) release(req writeRequest, claimed bool, now time.Time) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	ck := capKey{req.capability, req.key}
	if claimed {
		delete(st.inflight, ck)
	}
	return st.hit(ck, now)
}

// commit applies the business rules, stores the write (committed or
// rejected) durably and ends the claim.
func (st *state) commit(req writeRequest, claimed bool, f faults, now time.Time, lag time.Duration) (*Write, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if claimed {
		defer delete(st.inflight, capKey{req.capability, req.key})
	}
	w := &Write{
		ID: newID(req.capability), Capability: req.capability, Key: req.key,
		ExternalRef: req.externalRef, Operation: req.operation, Payload: req.payload,
		Status: StatusCommitted, CreatedAt: now, VisibleAt: now.Add(lag),
	}
	w.Code, w.Message = st.rejection(req, f)
	switch {
	case w.Code != "":
		w.Status = StatusRejected
	case f.pending > 0:
		w.Status, w.DecidedAt = StatusPending, now.Add(f.pending)
	}
	w.Data = st.calendarData(w)
	if err := st.record(event{Event: "write", Write: w}); err != nil {
		return nil, err
	}
	return w, nil
}

// rejection returns the business rejection a write meets, if any.
func (st *state) rejection(req writeRequest, f faults) (code, message string) {
	switch {
	case f.reject != "":
		return f.reject, "rejected by the reject fault"
	case req.capability == Payments && req.fields["payment_method"] == "pm_card_declined":
		return "PAYMENT_DECLINED", "the card was declined"
	case req.capability == Calendar:
		if slot, ok := req.fields["slot_id"].(string); ok && slot != "" {
			if _, taken := st.slots[slot]; taken {
				return "SLOT_UNAVAILABLE", "the slot is already booked"
			}
		}
		return st.calendarRejection(req)
	}
	return "", ""
}

func slotOf(w *Write) string {
	if w.Capability != Calendar {
		return ""
	}
	var p struct {
		SlotID any `json:"slot_id"`
	}
	if json.Unmarshal(w.Payload, &p) != nil {
		return ""
	}
	s, _ := p.SlotID.(string)
	return s
}

// visible reports whether lookups at now see w, given the lag the lookup
// itself runs with.
func visible(w *Write, now time.Time, lag time.Duration) bool {
	return !now.Before(w.VisibleAt) && !now.Before(w.CreatedAt.Add(lag))
}

// inFlight counts the keys whose first write is being processed.
func (st *state) inFlight() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.inflight)
}

// lookupKey is the first write stored under the key within retention that
// lookups can see.
func (st *state) lookupKey(ck capKey, now time.Time, lag, retention time.Duration) *Write {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, w := range st.byKey[ck] {
		if now.Sub(w.CreatedAt) < retention && visible(w, now, lag) {
			v := w.at(now)
			return &v
		}
	}
	return nil
}

// lookupRef lists the visible writes with an external reference.
func (st *state) lookupRef(cr capRef, now time.Time, lag time.Duration) []Write {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := []Write{}
	for _, w := range st.byRef[cr] {
		if visible(w, now, lag) {
			out = append(out, w.at(now))
		}
	}
	return out
}

// LedgerEntry is one committed write as the audit endpoint lists it.
type LedgerEntry struct {
	Write
	// Requests is how many write requests carried this write's key
	// (the first, replays, conflicts, failures; every write sharing the key
	// shows the same number). 1 for a write without a key.
	Requests int `json:"requests"`
}

// ledger lists the committed writes, oldest first, of one capability or
// all: pending writes once they are decided.
func (st *state) ledger(capability string, now time.Time) []LedgerEntry {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := []LedgerEntry{}
	for _, stored := range st.writes {
		w := stored.at(now)
		if w.Status != StatusCommitted || (capability != "" && w.Capability != capability) {
			continue
		}
		n := 1
		if w.Key != "" {
			n = st.hits[capKey{w.Capability, w.Key}]
		}
		out = append(out, LedgerEntry{Write: w, Requests: n})
	}
	return out
}

// newID returns a provider reference: a capability prefix and a time-ordered UUID.
func newID(capability string) string {
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	var prefix string
	switch capability {
	case Calendar:
		prefix = "cal_"
	case Payments:
		prefix = "pay_"
	case Messaging:
		prefix = "msg_"
	case CRM:
		prefix = "crm_"
	}
	return prefix + strings.ReplaceAll(id.String(), "-", "")
}
