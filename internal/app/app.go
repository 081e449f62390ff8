// Package app wires oncecall together: the database (an external one or the
// embedded launcher), migrations, the idempotency core, the operations and
// the HTTP server. cmd/oncecall and end-to-end tests start the real program
// through it.
package app

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/catalog"
	"github.com/oncecall/oncecall/internal/console"
	"github.com/oncecall/oncecall/internal/customer"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/message"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/payment"
	"github.com/oncecall/oncecall/internal/pgembed"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/prune"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/staff"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/tokenguard"
	"github.com/oncecall/oncecall/reconcile"
)

// Config configures a running oncecall.
type Config struct {
	// Addr is the listen address. Default ":8080"; "127.0.0.1:0" picks a port.
	Addr string
	// DatabaseURL selects an existing database; empty starts the embedded one.
	// Its default_query_exec_mode option picks how pgx sends statements
	// (docs/pgbouncer.md).
	DatabaseURL string
	// MigrateDatabaseURL, when set, is where the migrations run instead of
	// DatabaseURL: a direct connection when DatabaseURL goes through a
	// transaction-pooling proxy, or a role allowed to change the schema.
	// Ignored with the embedded database.
	MigrateDatabaseURL string
	// DataDir holds the embedded database. Default ".oncecall".
	DataDir string
	// EmbeddedPort is the embedded database's TCP port on 127.0.0.1; 0
	// picks a free one at every start. Ignored with DatabaseURL.
	EmbeddedPort int
	// Log receives JSON logs.
	Log zerolog.Logger
	// Core tunes the idempotency core. Its AnswerBytes is
	// DefaultAnswerBytes when 0; a negative value keeps no answers in memory.
	Core idem.Config
	// MaxBodyBytes limits request bodies. Default 64 KiB.
	MaxBodyBytes int64
	// ShutdownTimeout bounds the drain of in-flight requests and of the
	// remote writes that outlived their requests. Default 15s.
	ShutdownTimeout time.Duration
	// MaxConns sizes the connection pool. Default DefaultMaxConns().
	MaxConns int32
	// DBTimeouts are the lock, statement and idle-in-transaction timeouts
	// of every pool connection (db.Timeouts documents the defaults).
	DBTimeouts db.Timeouts
	// StripeWebhookSecret, when set, serves Stripe's signed webhooks (see
	// docs/providers/stripe.md).
	StripeWebhookSecret string
	// TwilioAuthToken, when set, serves Twilio's signed status callbacks,
	// sent to PublicURL (oncecall's public base URL) and the status route
	// (see docs/providers/twilio.md).
	TwilioAuthToken, PublicURL string
	// LateResultURL, when set, replaces the check of the Vapi control URLs
	// late results are posted to (default: https on vapi.ai); tests point
	// it at a local fake.
	LateResultURL func(u *url.URL) bool
	// Providers maps capabilities to remote providers; a capability not in
	// it is served by oncecall's own tables.
	Providers provider.Set
	// Calendars configures the tenants' own calendars (connected with
	// `oncecall calendar connect`): where their secrets are read, each
	// call's bound, how long reads are reused. Its Store and Log are the
	// program's.
	Calendars calendars.Config
	// Simulate lists capabilities that the provider simulator, started in
	// this process, serves when Providers does not (DemoSimulated for
	// `make run`'s demo). Its ledger is kept in DataDir with the embedded
	// database, in memory otherwise.
	Simulate []string
	// Steps bounds the recovery of remote steps.
	Steps step.Config
	// Reconcile tunes the reconciler; ReconcileDisabled keeps it from
	// running inside this process.
	Reconcile         reconcile.Config
	ReconcileDisabled bool
	// Jobs tunes the workers of the durable jobs (late results).
	Jobs JobsConfig
	// OperatorToken enables /v1/ops for bearers of this token, and a
	// break-glass admin sign-in to the operator console (/console/, where
	// named staff sign in: docs/console.md); it
	// must be at least MinOperatorTokenLen characters. Wrong tokens are
	// slowed per client address and overall (internal/tokenguard).
	OperatorToken string
	// Console configures the operator console's staff: sessions, sign-in
	// throttling, and the identity provider (OIDC) when its Issuer is set.
	Console ConsoleConfig
	// DashaWait bounds how long a Dasha tool call waits for a running
	// attempt of the same action before answering pending. Default 5s.
	DashaWait time.Duration
	// DashaBudget is the time a Dasha tool call has, from its arrival to
	// its answer; see api.Config. Default dashatool.AnswerBudget (8s).
	DashaBudget time.Duration

	// Server timeouts against slow clients: reading the request headers,
	// reading the whole request, writing the answer (keep it above
	// Prefer: wait's 10s cap and the core's claim wait), and keeping an idle
	// keep-alive connection. Defaults 5s, 15s, 30s, 120s.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration

	// RateLimit is each tenant's sustained request rate per second on /v1;
	// zero disables it (`oncecall serve` defaults to 50). RateBurst is the
	// number of requests a tenant may send at once (default: the rate).
	RateLimit float64
	RateBurst int
	// DashaRateLimit and DashaRateBurst are the Dasha webhooks' own
	// per-tenant budget (`oncecall serve` defaults to 200 per second, bursts
	// of 400); past it they answer 503 with Retry-After, which Dasha
	// retries, never 429. Zero DashaRateLimit disables it.
	DashaRateLimit float64
	DashaRateBurst int

	// TenantDBRequests is how many requests of one tenant may use the
	// database at once (a REST write only while the core runs it, other
	// requests throughout), so that one tenant's slow or stuck requests
	// cannot hold every connection of the pool. Default half of MaxConns (at least 1);
	// negative disables the limit. A request waits up to TenantDBWait
	// (default 1s) for its turn, then gets 503 with Retry-After.
	TenantDBRequests int
	TenantDBWait     time.Duration
	// DBRequests is how many requests, all tenants together, may use the
	// database at once: default MaxConns, negative disables the bound. A
	// request past it waits up to DBWait (default api.DefaultDBWait) for a
	// place, then gets 503 with Retry-After; one that finds 8 requests a
	// place waiting already is refused at once.
	DBRequests int
	DBWait     time.Duration
	// BodyReadTimeout bounds the read of a request body, which is read
	// whole before the request takes one of its tenant's places. Default 5s.
	BodyReadTimeout time.Duration

	// MetricsToken, when set, is the Bearer token /metrics requires.
	MetricsToken string
	// MetricsCacheTTL is how long the action counts behind the actions
	// gauges are reused between scrapes. Default 10s.
	MetricsCacheTTL time.Duration

	// Prune is the retention applied while serving (Serve sets its Pruned
	// and Log to the program's metrics and log).
	Prune prune.Config
	// PruneInterval is how often Serve prunes; zero disables pruning
	// (`oncecall serve` defaults to 10m).
	PruneInterval time.Duration

	// Clusters are PostgreSQL clusters besides the database of DatabaseURL
	// (the home cluster), each by name: tenants the directory places on
	// one are served from it (docs/scaling.md#tenants-across-clusters).
	// Each is migrated, reconciled and pruned like the home cluster. None:
	// every tenant is served from the home cluster, with no directory read.
	Clusters []ClusterURL
}

// ClusterURL names a PostgreSQL cluster of Config.Clusters.
type ClusterURL struct {
	Name, URL string
}

// Main is a running oncecall.
type Main struct {
	cfg        Config
	ops        *op.Registry
	driver     *step.Driver
	calendars  *calendars.Service
	reconciler *reconcile.Reconciler
	core       *idem.Core
	jobs       *river.Client[pgx.Tx] // the home cluster's job workers
	pg         *pgembed.Postgres
	pool       *pgxpool.Pool
	dbURL      string // the database in use
	store      *db.Store
	metrics    *metrics.Metrics
	ln         net.Listener
	srv        *http.Server
	// The provider simulator this process runs (Config.Simulate), the
	// capabilities it serves, and the end of its Serve.
	sim       *providersim.Main
	simulated []string
	simServed chan error
	// extra are the clusters of Config.Clusters, each with its own stack.
	extra []*cluster
}

// cluster is what serves the tenants of one PostgreSQL cluster: its pool
// and store, and the core, driver and reconciler over them.
type cluster struct {
	name       string
	pool       *pgxpool.Pool
	store      *db.Store
	core       *idem.Core
	driver     *step.Driver
	reconciler *reconcile.Reconciler
	calendars  *calendars.Service
	// workers are the River workers its router registers; jobs works
	// them (jobs.go).
	workers *river.Workers
	jobs    *river.Client[pgx.Tx]
}

// Operations returns every operation oncecall offers.
func Operations() *op.Registry {
	var ops []op.Operation
	for _, family := range [][]op.Operation{
		booking.Operations(), payment.Operations(), message.Operations(), customer.Operations(), callback.Operations(),
		catalog.Operations(),
	} {
		ops = append(ops, family...)
	}
	return op.NewRegistry(ops...)
}

// ConsoleConfig configures the operator console.
type ConsoleConfig struct {
	// SessionTTL is how long a sign-in lasts. Default 8h.
	SessionTTL time.Duration
	// BcryptCost is the cost of password hashes. Default 12.
	BcryptCost int
	// OIDC is the clinic's identity provider; none when its Issuer is empty.
	OIDC staff.OIDCConfig
	// Zone shows times that belong to no tenant. Default time.Local.
	Zone *time.Location
	// TraceURL links an action's page to its trace (console.Config).
	TraceURL string
}

// MinOperatorTokenLen is the shortest operator token accepted: guessing
// one is slowed (internal/tokenguard), but only its length makes it
// unguessable.
const MinOperatorTokenLen = 32

// CheckOperatorToken refuses an operator token shorter than
// MinOperatorTokenLen; empty (no operator API, no console) is fine.
func CheckOperatorToken(token string) error {
	if token != "" && len(token) < MinOperatorTokenLen {
		return fmt.Errorf("ONCECALL_OPERATOR_TOKEN is %d characters: an operator token must be at least %d, such as the 64 that `openssl rand -hex 32` prints",
			len(token), MinOperatorTokenLen)
	}
	return nil
}

// Start opens the database (starting the embedded one when no URL is
// given), applies migrations and starts listening. Serve runs the server.
// An operator token shorter than MinOperatorTokenLen stops it before
// anything starts.
func Start(ctx context.Context, cfg Config) (*Main, error) {
	if err := CheckOperatorToken(cfg.OperatorToken); err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		cfg.Addr = ":8080"
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 15 * time.Second
	}
	cfg.ReadHeaderTimeout = cmp.Or(cfg.ReadHeaderTimeout, 5*time.Second)
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, 15*time.Second)
	cfg.WriteTimeout = cmp.Or(cfg.WriteTimeout, 30*time.Second)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, 120*time.Second)
	m := &Main{cfg: cfg}
	url, migrateURL := cfg.DatabaseURL, cfg.MigrateDatabaseURL
	if url == "" {
		pg, err := StartEmbeddedOn(ctx, cfg.DataDir, cfg.EmbeddedPort, cfg.Log)
		if err != nil {
			return nil, err
		}
		m.pg = pg
		url, migrateURL = pg.URL("oncecall"), ""
	}
	cfg.MaxConns = cmp.Or(cfg.MaxConns, DefaultMaxConns())
	cfg.TenantDBRequests = cmp.Or(cfg.TenantDBRequests, max(1, int(cfg.MaxConns)/2))
	cfg.DBRequests = cmp.Or(cfg.DBRequests, int(cfg.MaxConns))
	pool, err := OpenPool(ctx, url, migrateURL, cfg.MaxConns, cfg.DBTimeouts)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.pool, m.store, m.dbURL = pool, db.New(pool), url

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	m.ln = ln
	m.metrics = metrics.New(metrics.Config{
		Actions: m.store.CountActions, Pool: pool, CacheTTL: cfg.MetricsCacheTTL, Log: cfg.Log,
	})
	coreCfg := cfg.Core
	if coreCfg.Observer == nil {
		coreCfg.Observer = m.metrics
	}
	switch {
	case coreCfg.AnswerBytes == 0:
		coreCfg.AnswerBytes = DefaultAnswerBytes
	case coreCfg.AnswerBytes < 0:
		coreCfg.AnswerBytes = 0
	}
	m.ops = Operations()
	providers, err := m.simulate(ctx, cfg)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.cfg = cfg // with its defaults
	home := m.newCluster("", pool, m.store, providers, coreCfg)
	m.driver, m.calendars, m.reconciler, m.core = home.driver, home.calendars, home.reconciler, home.core
	// One operator service for /v1/ops and the console.
	operator := reconcile.Operator{Store: m.store, Ops: m.ops}
	// One guard of the operator token for /v1/ops and the console's
	// sign-in: a guesser gains nothing by using both.
	operators := tokenguard.New(cfg.OperatorToken, tokenguard.Config{})
	oidcSignIn, err := staff.NewOIDC(cfg.Console.OIDC)
	if err != nil {
		m.Close()
		return nil, err
	}
	// The console is always served: named staff sign in to it; the
	// operator token, when set, only opens a break-glass session.
	consoleHandler, err := console.New(console.Config{
		Store: m.store, Ops: m.ops, Token: cfg.OperatorToken, Guard: operators, Operator: operator, Log: cfg.Log,
		Staff: staff.New(staff.Config{Store: m.store, SessionTTL: cfg.Console.SessionTTL, Cost: cfg.Console.BcryptCost}),
		OIDC:  oidcSignIn, Zone: cfg.Console.Zone, PublicURL: cfg.PublicURL, Calendars: consoleCalendars(m.calendars),
		TraceURL: cfg.Console.TraceURL,
	})
	if err != nil {
		m.Close()
		return nil, err
	}
	handler := m.router(home, api.Config{
		OperatorToken: cfg.OperatorToken, OperatorGuard: operators, Operator: operator, Console: consoleHandler,
	})
	if len(cfg.Clusters) > 0 {
		clusters := []api.Cluster{{Store: m.store, Handler: handler}}
		for _, c := range cfg.Clusters {
			cl, err := m.openCluster(ctx, c, providers, coreCfg)
			if err != nil {
				m.Close()
				return nil, err
			}
			clusters = append(clusters, api.Cluster{Name: c.Name, Store: cl.store,
				Handler: m.router(cl, api.Config{Operator: reconcile.Operator{Store: cl.store, Ops: m.ops}})})
		}
		handler = api.NewClusterRouter(api.ClustersConfig{Clusters: clusters, Directory: m.store.Directory, Log: cfg.Log})
	}
	if err := m.jobClients(home); err != nil {
		m.Close()
		return nil, err
	}
	m.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    32 << 10,
	}
	return m, nil
}

// newCluster builds the stack that serves one cluster's tenants: the
// driver of remote steps, the tenants' calendars, the reconciler and the
// idempotency core, over that cluster's store.
func (m *Main) newCluster(name string, pool *pgxpool.Pool, store *db.Store, providers provider.Set, coreCfg idem.Config) *cluster {
	cfg := m.cfg
	c := &cluster{name: name, pool: pool, store: store, workers: river.NewWorkers()}
	c.driver = step.NewDriver(store, m.ops, providers, cfg.Steps, cfg.Log)
	c.driver.Local = provider.Set{provider.Messaging: message.Local{Store: store}}
	calCfg := cfg.Calendars
	calCfg.Store, calCfg.Log = store, cfg.Log
	c.calendars = calendars.New(calCfg)
	// A tenant's own calendar is reached through its stored connection.
	c.driver.Accounts = c.calendars
	// Every step claimed here names the provider this configuration sends
	// it to; only a server configured for it drives the step.
	store.SetStepPlanner(c.driver.Plan)
	c.driver.Observe = func(ctx context.Context, capability, result string, took time.Duration) {
		if took > 0 {
			m.metrics.ProviderCall(ctx, capability, took)
		}
	}
	c.reconciler = reconcile.New(store, c.driver, cfg.Reconcile, cfg.Log)
	c.reconciler.Observe = m.metrics.ReconcileResult
	c.core = idem.New(store, coreCfg)
	c.core.SetDriver(c.driver)
	return c
}

// openCluster migrates and opens one cluster of Config.Clusters and
// builds its stack.
func (m *Main) openCluster(ctx context.Context, c ClusterURL, providers provider.Set, coreCfg idem.Config) (*cluster, error) {
	pool, err := OpenPool(ctx, c.URL, "", m.cfg.MaxConns, m.cfg.DBTimeouts)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	cl := m.newCluster(c.Name, pool, db.New(pool), providers, coreCfg)
	m.extra = append(m.extra, cl)
	return cl, nil
}

// router is the API over one cluster's stack; base adds what only the home
// cluster's router serves (the operator API and the console).
func (m *Main) router(c *cluster, base api.Config) http.Handler {
	cfg := m.cfg
	base.Store, base.Core, base.Ops, base.Log = c.store, c.core, m.ops, cfg.Log
	base.MaxBodyBytes, base.DashaWait, base.DashaBudget = cfg.MaxBodyBytes, cfg.DashaWait, cfg.DashaBudget
	base.Metrics, base.MetricsToken = m.metrics, cfg.MetricsToken
	base.RateLimit, base.RateBurst = cfg.RateLimit, cfg.RateBurst
	base.DashaRateLimit, base.DashaRateBurst = cfg.DashaRateLimit, cfg.DashaRateBurst
	base.TenantRequests, base.TenantWait, base.BodyReadTimeout = max(0, cfg.TenantDBRequests), cfg.TenantDBWait, cfg.BodyReadTimeout
	base.DBRequests, base.DBWait = max(0, cfg.DBRequests), cfg.DBWait
	base.Remote, base.Calendars = c.driver, c.calendars
	base.StripeWebhookSecret, base.TwilioAuthToken, base.PublicURL = cfg.StripeWebhookSecret, cfg.TwilioAuthToken, cfg.PublicURL
	base.LateResultURL, base.Jobs = cfg.LateResultURL, c.workers
	return api.NewRouter(base)
}

// DefaultAnswerBytes is the memory a server spends by default keeping the
// completed answers it gave recently, so that their replays are answered
// without the database: about 8,000 bookings' answers.
const DefaultAnswerBytes = 8 << 20

// DefaultMaxConns sizes the pool to the machine: a few connections per core
// keep PostgreSQL busy, and more only queue inside it (measured with
// cmd/bench: 20 connections on 2 cores served fewer requests than 6).
func DefaultMaxConns() int32 { return int32(max(4, 3*runtime.GOMAXPROCS(0))) }

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// Store is the running program's store.
func (m *Main) Store() *db.Store { return m.store }

// Embedded is the embedded database, nil when DatabaseURL was given.
func (m *Main) Embedded() *pgembed.Postgres { return m.pg }

// consoleCalendars is what the console reads of the businesses' own
// calendars: none without the service.
func consoleCalendars(s *calendars.Service) console.CalendarEvents {
	if s == nil {
		return nil
	}
	return s
}
