package db

import "time"

// A detached commit (detach) runs on a goroutine of its own, and its call
// reaches deep into pgx. A new goroutine starts with a small stack, which
// would grow, and be copied, on every commit; the goroutines are kept
// between commits instead, each waiting up to runnerIdle for the next.

// runnerIdle is how long a kept goroutine waits for a commit before it ends.
const runnerIdle = 10 * time.Second

// runners hands functions to kept goroutines.
type runners struct {
	jobs chan func() // unbuffered: a send succeeds only when a goroutine waits
	idle time.Duration
}

func newRunners(idle time.Duration) *runners {
	return &runners{jobs: make(chan func()), idle: idle}
}

// commitRunners run every store's detached commits.
var commitRunners = newRunners(runnerIdle)

// run runs f on a waiting goroutine, or on a new one when none waits: f
// never waits for another function to end.
func (r *runners) run(f func()) {
	select {
	case r.jobs <- f:
	default:
		go r.keep(f)
	}
}

// keep runs f, then the functions handed to it, until none comes for r.idle.
func (r *runners) keep(f func()) {
	idle := time.NewTimer(r.idle)
	defer idle.Stop()
	for {
		f()
		f = nil // what it holds is not kept while waiting
		idle.Reset(r.idle)
		select {
		case f = <-r.jobs:
		case <-idle.C:
			return
		}
	}
}
