package idem

import "sync/atomic"

// replayShare estimates the share of this process's recent requests for an
// operation with a statement (op.Stater) that found their key
// already taken: a moving average over about the last 64 such requests,
// in units of 1/65536. It picks which of two correct first round trips a
// request takes, never an answer:
//
//   - the statement (the usual case): a first execution costs its one
//     round trip, and a replay costs the statement too, which starts its
//     whole plan (both INSERTs and the subqueries of the answer) only to
//     return the action its first step read;
//   - the read of the action by key (ActionByKey) first, the statement only
//     when the key is free: a replay costs that read alone, a first
//     execution the read and then the statement.
//
// A replay's statement costs more than twice the read in CPU, this
// process's and PostgreSQL's together (docs/performance-log.md), so the read
// first is the cheaper path once more than about one request in two is a
// replay, and it is taken then: when replays dominate (clients retrying
// after an outage, a platform re-sending a call's tool calls). Either path
// answers every request correctly: a key the read finds taken is followed
// as it is now (stale answers and retired keys included); a key it finds
// free is claimed by the statement, which checks it again. A wrong
// estimate costs one read, nothing else.
type replayShare struct{ v atomic.Int64 }

const (
	replayShareOne    = 1 << 16
	replayShareWindow = 6 // the average's weight of a new request: 1/2^6
)

// observe counts one request: a replay (the key was taken) or not.
// Concurrent calls may lose an update, which only slows the average.
func (r *replayShare) observe(replay bool) {
	v, target := r.v.Load(), int64(0)
	if replay {
		target = replayShareOne
	}
	r.v.Store(v + (target-v)>>replayShareWindow)
}

// likely reports whether most recent requests were replays.
func (r *replayShare) likely() bool { return r.v.Load() > replayShareOne/2 }
