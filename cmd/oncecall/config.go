package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/console"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/internal/staff"
)

// envDefaults reads flag defaults from environment variables and remembers
// the first malformed one, so a typo in the environment is an error rather
// than a silently ignored setting.
type envDefaults struct{ err error }

func (e *envDefaults) fail(name, value, want string) {
	if e.err == nil {
		e.err = fmt.Errorf("environment variable %s=%q: want %s", name, value, want)
	}
}

func (e *envDefaults) duration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.fail(name, v, "a duration such as 30s, 10m or 24h")
		return def
	}
	return d
}

func (e *envDefaults) int(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		e.fail(name, v, "a non-negative integer")
		return def
	}
	return n
}

func (e *envDefaults) float(name string, def float64) float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		e.fail(name, v, "a non-negative number")
		return def
	}
	return f
}

func (e *envDefaults) bool(name string, def bool) bool {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(name, v, "1, true, 0 or false")
		return def
	}
	return b
}

// retention holds the retention flags shared by serve and prune.
type retention struct {
	response, action time.Duration
	batch            int
	duty             float64
}

func (r *retention) check() error {
	if r.response <= 0 || r.action <= 0 {
		return errors.New("--response-retention and --action-retention must be positive")
	}
	if r.batch < 1 || r.batch > 100000 {
		return errors.New("--prune-batch must be between 1 and 100000")
	}
	if !(r.duty > 0 && r.duty <= 1) {
		return errors.New("--prune-duty must be more than 0 and at most 1")
	}
	return nil
}

// checkAnswerCache checks the settings of the answers kept in memory
// against the response retention, naming only what is wrong, and derives
// the age when it was not set: a minute, or half the retention when that
// is shorter, since a kept answer must not outlive its stored body. No
// bytes (or no age left) keeps none: bytes becomes -1 (app's "none").
func checkAnswerCache(bytes *int, age *time.Duration, ageSet bool, retention time.Duration) error {
	if *bytes < 0 {
		return fmt.Errorf("--answer-cache-bytes %d must not be negative (0 keeps no answers)", *bytes)
	}
	switch {
	case !ageSet:
		*age = min(time.Minute, retention/2)
	case *age <= 0:
		return fmt.Errorf("--answer-cache-age %v must be positive", *age)
	case *age >= retention:
		return fmt.Errorf("--answer-cache-age %v must be shorter than --response-retention %v: a kept answer must not outlive its stored body", *age, retention)
	}
	if *bytes == 0 || *age <= 0 {
		*bytes = -1
	}
	return nil
}

// dbTimeoutFlags declares the PostgreSQL session timeouts of serve's pool
// (db.Timeouts says what each one stops).
func dbTimeoutFlags(fs *flag.FlagSet, envs *envDefaults) *db.Timeouts {
	t := &db.Timeouts{}
	d := db.DefaultTimeouts
	fs.DurationVar(&t.Lock, "db-lock-timeout", envs.duration("ONCECALL_DB_LOCK_TIMEOUT", d.Lock),
		"PostgreSQL lock_timeout of every pool connection: how long a statement waits for a row another transaction holds before the request answers 503 (env ONCECALL_DB_LOCK_TIMEOUT)")
	fs.DurationVar(&t.Statement, "db-statement-timeout", envs.duration("ONCECALL_DB_STATEMENT_TIMEOUT", d.Statement),
		"PostgreSQL statement_timeout of every pool connection; migrations run without it (env ONCECALL_DB_STATEMENT_TIMEOUT)")
	fs.DurationVar(&t.IdleInTransaction, "db-idle-in-transaction-timeout", envs.duration("ONCECALL_DB_IDLE_IN_TRANSACTION_TIMEOUT", d.IdleInTransaction),
		"PostgreSQL idle_in_transaction_session_timeout of every pool connection: a session cut off inside a transaction is ended and its locks freed after this (env ONCECALL_DB_IDLE_IN_TRANSACTION_TIMEOUT)")
	return t
}

func checkTimeouts(t *db.Timeouts) error {
	for _, d := range []time.Duration{t.Lock, t.Statement, t.IdleInTransaction} {
		if d < time.Millisecond || d > time.Hour {
			return fmt.Errorf("--db-lock-timeout, --db-statement-timeout and --db-idle-in-transaction-timeout must be between 1ms and 1h, not %v", d)
		}
	}
	return nil
}

// fairness holds serve's per-tenant share of the pool and the server's
// admission control.
type fairness struct {
	requests int
	wait     time.Duration
	dbWait   time.Duration
}

func fairnessFlags(fs *flag.FlagSet, envs *envDefaults) *fairness {
	f := &fairness{}
	fs.IntVar(&f.requests, "tenant-db-requests", envs.int("ONCECALL_TENANT_DB_REQUESTS", 0),
		"how many requests of one tenant may run at once, so one tenant cannot hold every database connection; 0 means half of --db-max-conns (env ONCECALL_TENANT_DB_REQUESTS)")
	fs.DurationVar(&f.wait, "tenant-db-wait", envs.duration("ONCECALL_TENANT_DB_WAIT", time.Second),
		"how long a request waits for its tenant's turn before it gets 503 with Retry-After (env ONCECALL_TENANT_DB_WAIT)")
	fs.DurationVar(&f.dbWait, "db-wait", envs.duration("ONCECALL_DB_WAIT", api.DefaultDBWait),
		"how long a request waits for one of the server's --db-max-conns places in the database before it gets 503 with Retry-After; "+
			"one that finds 8 requests a place waiting already is refused at once (env ONCECALL_DB_WAIT)")
	return f
}

func (f *fairness) check(maxConns int) error {
	if f.requests < 0 || f.requests > maxConns {
		return fmt.Errorf("--tenant-db-requests must be between 0 (half the pool) and --db-max-conns (%d)", maxConns)
	}
	if f.wait < time.Millisecond || f.wait > time.Minute {
		return errors.New("--tenant-db-wait must be between 1ms and 1m")
	}
	if f.dbWait < time.Millisecond || f.dbWait > time.Minute {
		return errors.New("--db-wait must be between 1ms and 1m")
	}
	return nil
}

// consoleConfig reads the operator console's settings: the zone of times
// that belong to no tenant, and the identity provider for signing in
// (docs/console.md#signing-in-through-the-identity-provider).
func consoleConfig(getenv func(string) string) (app.ConsoleConfig, error) {
	var c app.ConsoleConfig
	if z := getenv("ONCECALL_CONSOLE_TIMEZONE"); z != "" {
		loc, err := schedule.ParseZone(z)
		if err != nil {
			return c, fmt.Errorf("ONCECALL_CONSOLE_TIMEZONE=%q: %w", z, err)
		}
		c.Zone = loc
	}
	if c.TraceURL = strings.TrimSpace(getenv("ONCECALL_TRACE_URL")); c.TraceURL != "" {
		u, err := url.Parse(c.TraceURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.Contains(c.TraceURL, console.TraceIDPlaceholder) {
			return c, fmt.Errorf("ONCECALL_TRACE_URL=%q must be an http(s) URL with %s where the trace id goes, such as https://jaeger.example/trace/%s",
				c.TraceURL, console.TraceIDPlaceholder, console.TraceIDPlaceholder)
		}
	}
	issuer := getenv("ONCECALL_OIDC_ISSUER")
	if issuer == "" {
		return c, nil
	}
	public := strings.TrimRight(getenv("ONCECALL_PUBLIC_URL"), "/")
	if public == "" {
		return c, errors.New("ONCECALL_OIDC_ISSUER is set but ONCECALL_PUBLIC_URL is not: the identity provider sends people back to ONCECALL_PUBLIC_URL/console/oidc/callback")
	}
	if getenv("ONCECALL_OIDC_CLIENT_ID") == "" {
		return c, errors.New("ONCECALL_OIDC_ISSUER is set but ONCECALL_OIDC_CLIENT_ID is not: register oncecall at the identity provider and give its client id")
	}
	c.OIDC = staff.OIDCConfig{
		Issuer: issuer, ClientID: getenv("ONCECALL_OIDC_CLIENT_ID"), ClientSecret: getenv("ONCECALL_OIDC_CLIENT_SECRET"),
		RedirectURL: public + "/console/oidc/callback", Name: getenv("ONCECALL_OIDC_NAME"),
	}
	return c, nil
}
