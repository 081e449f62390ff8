package idem

import (
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
)

// answers keeps the completed actions this process answered recently, so
// that a replay of one is answered from memory, without the database: a
// retry storm then costs each retry its HTTP request and little else.
//
// It holds only what cannot change while it is held:
//
//   - a completed action: its outcome and stored answer are final (nothing
//     updates a completed action's answer); pruning clears the answer after
//     the response retention and deletes the action after the action
//     retention, both counted from its completion, and an entry is used only
//     until maxAge past the action's creation, which the server keeps
//     shorter than the response retention;
//   - under a key that no request can retire: RetireKey frees a key only
//     for a request whose answer may go stale (Request.Stale), and such
//     keys are derived ("derived:…"), so a derived key is never held and a
//     request that sets Stale never reads or fills it;
//   - known to be replicated: an entry is stored after this process's own
//     first execution of a local operation committed (its COMMIT waited for
//     the synchronous standby; a cancelled wait is an error, not an answer)
//     or after a replay's Replicated check, so a failover to the synchronous
//     standby cannot lose what an entry confirms. A remote action's first
//     answer is not kept: its driver may report a completion another
//     driver committed.
//
// A request that names an action (Request.Named) is read by id as before.
// The fingerprint and operation checks run on an entry as on a row, so a
// key reused with another request is still refused. An entry holds the
// whole action, its normalised request included: a voice platform's answer
// compares a retry with it and tells what changed since. Entries are
// evicted oldest first when the byte budget is spent, and ignored once
// maxAge has passed since their action's creation.
type answers struct {
	mu     sync.Mutex
	budget int // bytes
	used   int
	maxAge time.Duration
	now    func() time.Time
	byKey  map[answerKey]*answer
	// queue holds the entries in the order they were stored, from head:
	// the oldest is evicted first.
	queue []*answer
	head  int
}

type answerKey struct {
	tenant uuid.UUID
	key    string
}

type answer struct {
	key    answerKey
	action oncecall.Action
	// expires is maxAge past the action's creation.
	expires time.Time
	size    int
}

func newAnswers(budget int, maxAge time.Duration) *answers {
	if budget <= 0 {
		return nil
	}
	return &answers{budget: budget, maxAge: maxAge, now: time.Now, byKey: map[answerKey]*answer{}}
}

// holds reports whether req's answer may be taken from or kept in memory.
func (s *answers) holds(req *Request) bool {
	return s != nil && req.Stale == nil && req.Named == uuid.Nil && !strings.HasPrefix(req.Key, derivedKeyPrefix)
}

// get returns the completed action kept for (tenant, key), unless it is
// older than maxAge.
func (s *answers) get(tenant uuid.UUID, key string) (oncecall.Action, bool) {
	k := answerKey{tenant, key}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byKey[k]
	if !ok {
		return oncecall.Action{}, false
	}
	if !s.now().Before(e.expires) {
		delete(s.byKey, k)
		return oncecall.Action{}, false
	}
	return e.action, true
}

// put keeps a, a completed action that is known to be replicated, unless
// it is already older than maxAge. An action without a creation time (one
// a first execution built in memory) counts as created now.
func (s *answers) put(a oncecall.Action) {
	if a.State != oncecall.Completed || a.Key == "" {
		return
	}
	a.LeaseUntil = nil
	e := &answer{key: answerKey{a.TenantID, a.Key}, action: a}
	e.size = answerOverhead + len(a.Key) + len(a.Operation) + len(a.Fingerprint) + len(a.Reason) +
		len(a.ResourceID) + len(a.Result) + len(a.Request) + len(a.CallID)
	if e.size > s.budget/16 {
		return // one answer may not push out many
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	born := a.CreatedAt
	if born.IsZero() || born.After(now) {
		born = now
	}
	if e.expires = born.Add(s.maxAge); !now.Before(e.expires) {
		return
	}
	if _, ok := s.byKey[e.key]; ok {
		return // the same action: it cannot have changed
	}
	for s.head < len(s.queue) && (s.used+e.size > s.budget || !now.Before(s.queue[s.head].expires)) {
		s.evict()
	}
	s.byKey[e.key] = e
	s.queue = append(s.queue, e)
	s.used += e.size
}

// evict drops the oldest entry.
func (s *answers) evict() {
	old := s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	s.used -= old.size
	if s.byKey[old.key] == old {
		delete(s.byKey, old.key)
	}
	// Reuse the queue's front once half of it is spent.
	if s.head > len(s.queue)/2 {
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
}

// answerOverhead approximates what an entry costs beyond its strings and
// body: the map slot, the entry and the action's fixed fields.
const answerOverhead = 320
