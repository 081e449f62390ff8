package db

import (
	"cmp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Timeouts bound how long PostgreSQL lets one of oncecall's sessions wait
// for a lock, run a statement, or sit inside a transaction it does not use.
// Without them a transaction left open elsewhere (an operator's psql
// session holding a row, a client cut off by a network partition) blocks
// every request that needs the same rows for as long as it stays open, and
// each such request holds a pool connection meanwhile. A zero field takes
// its default; a negative one turns that timeout off.
type Timeouts struct {
	// Lock is lock_timeout: how long a statement waits for a row or table
	// lock. Default 2s.
	Lock time.Duration
	// Statement is statement_timeout: how long one statement may run.
	// Default 5s.
	Statement time.Duration
	// IdleInTransaction is idle_in_transaction_session_timeout: PostgreSQL
	// ends a session that stays idle this long inside a transaction (its
	// client vanished), which rolls the transaction back and frees its
	// locks. Default 10s.
	IdleInTransaction time.Duration
}

// DefaultTimeouts are the timeouts of a zero Timeouts.
var DefaultTimeouts = Timeouts{Lock: 2 * time.Second, Statement: 5 * time.Second, IdleInTransaction: 10 * time.Second}

// WithDefaults returns t with zero fields set to their defaults.
func (t Timeouts) WithDefaults() Timeouts {
	return Timeouts{
		Lock:              cmp.Or(t.Lock, DefaultTimeouts.Lock),
		Statement:         cmp.Or(t.Statement, DefaultTimeouts.Statement),
		IdleInTransaction: cmp.Or(t.IdleInTransaction, DefaultTimeouts.IdleInTransaction),
	}
}

// SetTimeouts makes every connection of a pool start with t (defaults
// applied). They travel as startup parameters, so they cost no round trip.
// Migrations run on a connection of their own and do not get them.
func SetTimeouts(cfg *pgxpool.Config, t Timeouts) {
	t = t.WithDefaults()
	params := cfg.ConnConfig.RuntimeParams
	params["lock_timeout"] = millis(t.Lock)
	params["statement_timeout"] = millis(t.Statement)
	params["idle_in_transaction_session_timeout"] = millis(t.IdleInTransaction)
}

// millis renders a duration as a PostgreSQL time setting; "0" turns it off.
func millis(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	return strconv.FormatInt(max(1, d.Milliseconds()), 10) + "ms"
}
