package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/canon"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/prune"
)

// serveNotes follow serve's flags: what is set elsewhere than on serve.
const serveNotes = `The operator console is served under /console/; add its staff with oncecall operator add (docs/console.md).
README lists every setting.
`

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var envs envDefaults
	addr := fs.String("addr", env("ONCECALL_ADDR", ":8080"), "listen address (env ONCECALL_ADDR)")
	dataDir := fs.String("data-dir", env("ONCECALL_DATA_DIR", ".oncecall"), "embedded database folder, used when DATABASE_URL is unset (env ONCECALL_DATA_DIR)")
	embeddedPort := fs.Int("embedded-port", envs.int("ONCECALL_EMBEDDED_PORT", 0), "the embedded database's port on 127.0.0.1, so its URL stays the same across restarts; 0 picks a free one at every start (env ONCECALL_EMBEDDED_PORT)")
	noReconcile := fs.Bool("no-reconcile", envs.bool("ONCECALL_NO_RECONCILE", false), "do not run the reconciler in this process (env ONCECALL_NO_RECONCILE)")
	lease := fs.Duration("lease", envs.duration("ONCECALL_LEASE", 30*time.Second), "how long a claimed remote action may run before the reconciler treats it as abandoned (env ONCECALL_LEASE)")
	requireURL := fs.Bool("require-database-url", envs.bool("ONCECALL_REQUIRE_DATABASE_URL", false), "refuse to start without DATABASE_URL instead of starting an embedded database (env ONCECALL_REQUIRE_DATABASE_URL)")
	maxBody := fs.Int("max-body-bytes", envs.int("ONCECALL_MAX_BODY_BYTES", 64<<10), "largest accepted request body in bytes; larger ones get 413 (env ONCECALL_MAX_BODY_BYTES)")
	readHeader := fs.Duration("read-header-timeout", envs.duration("ONCECALL_READ_HEADER_TIMEOUT", 5*time.Second), "time allowed to read a request's headers (env ONCECALL_READ_HEADER_TIMEOUT)")
	read := fs.Duration("read-timeout", envs.duration("ONCECALL_READ_TIMEOUT", 15*time.Second), "time allowed to read a whole request (env ONCECALL_READ_TIMEOUT)")
	write := fs.Duration("write-timeout", envs.duration("ONCECALL_WRITE_TIMEOUT", 30*time.Second), "time allowed from the end of the headers to the end of the answer (env ONCECALL_WRITE_TIMEOUT)")
	idle := fs.Duration("idle-timeout", envs.duration("ONCECALL_IDLE_TIMEOUT", 120*time.Second), "how long an idle keep-alive connection stays open (env ONCECALL_IDLE_TIMEOUT)")
	shutdown := fs.Duration("shutdown-timeout", envs.duration("ONCECALL_SHUTDOWN_TIMEOUT", 15*time.Second), "how long a stop waits for in-flight requests and the remote writes they started (env ONCECALL_SHUTDOWN_TIMEOUT)")
	maxConns := fs.Int("db-max-conns", envs.int("ONCECALL_DB_MAX_CONNS", int(app.DefaultMaxConns())), "PostgreSQL connection pool size; default 3 per CPU, at least 4 (env ONCECALL_DB_MAX_CONNS)")
	rateLimit := fs.Float64("rate-limit", envs.float("ONCECALL_RATE_LIMIT", 50), "requests per second each tenant may sustain on /v1; 0 disables (env ONCECALL_RATE_LIMIT)")
	rateBurst := fs.Int("rate-burst", envs.int("ONCECALL_RATE_BURST", 100), "requests a tenant may send in one burst (token bucket size) (env ONCECALL_RATE_BURST)")
	dashaRate := fs.Float64("dasha-rate-limit", envs.float("ONCECALL_DASHA_RATE_LIMIT", 200), "Dasha webhook calls per second each tenant may sustain, a budget of their own; past it they get 503 with Retry-After (Dasha retries it), never 429; 0 disables (env ONCECALL_DASHA_RATE_LIMIT)")
	dashaBurst := fs.Int("dasha-rate-burst", envs.int("ONCECALL_DASHA_RATE_BURST", 400), "Dasha webhook calls a tenant may send in one burst (env ONCECALL_DASHA_RATE_BURST)")
	metricsToken := fs.String("metrics-token", os.Getenv("ONCECALL_METRICS_TOKEN"), "Bearer token required by /metrics; empty leaves it open (env ONCECALL_METRICS_TOKEN, preferred: flags are visible in ps)")
	dashaWait := fs.Duration("dasha-wait", envs.duration("ONCECALL_DASHA_WAIT", 5*time.Second), "how long a Dasha tool call waits for a running attempt of the same action before answering pending (env ONCECALL_DASHA_WAIT)")
	dashaBudget := fs.Duration("dasha-budget", envs.duration("ONCECALL_DASHA_BUDGET", dashatool.AnswerBudget), "the time a Dasha tool call has from its arrival to its answer; a slow provider's write then goes on and the call answers pending; under Dasha's 10s webhook limit (env ONCECALL_DASHA_BUDGET)")
	answerBytes := fs.Int("answer-cache-bytes", envs.int("ONCECALL_ANSWER_CACHE_BYTES", app.DefaultAnswerBytes), "memory for the completed answers this server gave recently, so that their replays are answered without the database; 0 keeps none (env ONCECALL_ANSWER_CACHE_BYTES)")
	answerAge := fs.Duration("answer-cache-age", envs.duration("ONCECALL_ANSWER_CACHE_AGE", 0), "how long a kept answer is used; shorter than --response-retention (default 1m, or half the retention when that is under 2m) (env ONCECALL_ANSWER_CACHE_AGE)")
	clusterList := fs.String("clusters", os.Getenv("ONCECALL_CLUSTERS"), "PostgreSQL clusters besides DATABASE_URL's, name=URL,...: each tenant is served from the cluster the directory places it on (docs/scaling.md#tenants-across-clusters) (env ONCECALL_CLUSTERS)")
	pruneEvery := fs.Duration("prune-interval", envs.duration("ONCECALL_PRUNE_INTERVAL", 10*time.Minute), "how often to prune expired bodies and actions; 0 disables (env ONCECALL_PRUNE_INTERVAL)")
	lateHosts := fs.String("late-result-hosts", os.Getenv("ONCECALL_LATE_RESULT_HOSTS"), "hosts besides Vapi's (https on vapi.ai) that late results may be posted to, comma-separated: a staging fake of Vapi's control URL; a tenant's call names the URL, so name only hosts you run (env ONCECALL_LATE_RESULT_HOSTS)")
	lateWorkers := fs.Int("late-workers", envs.int("ONCECALL_LATE_WORKERS", 8), "late results this process sends at once (env ONCECALL_LATE_WORKERS)")
	keep := retentionFlags(fs, &envs)
	timeouts := dbTimeoutFlags(fs, &envs)
	fair := fairnessFlags(fs, &envs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage of oncecall serve:")
		fs.PrintDefaults()
		fmt.Fprintln(fs.Output(), "\nThe caller-confirmation gate is a tenant's setting, not the server's: "+
			"oncecall tenant update --tenant NAME --caller-confirmation on|off (docs/voice-platforms.md#the-confirmation-gate).")
		fmt.Fprint(fs.Output(), serveNotes)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if envs.err != nil {
		return envs.err
	}
	if err := keep.check(); err != nil {
		return err
	}
	ageSet := os.Getenv("ONCECALL_ANSWER_CACHE_AGE") != ""
	fs.Visit(func(f *flag.Flag) { ageSet = ageSet || f.Name == "answer-cache-age" })
	if err := checkAnswerCache(answerBytes, answerAge, ageSet, keep.response); err != nil {
		return err
	}
	if err := checkTimeouts(timeouts); err != nil {
		return err
	}
	if *maxBody < 1 || *maxBody > canon.MaxInputLen {
		return fmt.Errorf("--max-body-bytes must be between 1 and %d", canon.MaxInputLen)
	}
	if min(*readHeader, *read, *write, *idle, *shutdown) <= 0 {
		return errors.New("server timeouts must be positive")
	}
	if *dashaBudget < 100*time.Millisecond || *dashaBudget >= 10*time.Second {
		return fmt.Errorf("--dasha-budget %v must be from 100ms to under Dasha's 10s webhook limit, such as 8s", *dashaBudget)
	}
	if *dashaWait <= 0 || *dashaWait >= *dashaBudget {
		return fmt.Errorf("--dasha-wait %v must be positive and shorter than --dasha-budget %v, such as 5s", *dashaWait, *dashaBudget)
	}
	if *embeddedPort < 0 || *embeddedPort > 65535 {
		return fmt.Errorf("--embedded-port %d must be a TCP port (1-65535), or 0 for a free one", *embeddedPort)
	}
	if *maxConns < 1 || *maxConns > 10000 {
		return errors.New("--db-max-conns must be between 1 and 10000")
	}
	if err := fair.check(*maxConns); err != nil {
		return err
	}
	if *rateLimit < 0 || *rateBurst < 0 || *dashaRate < 0 || *dashaBurst < 0 {
		return errors.New("--rate-limit, --rate-burst, --dasha-rate-limit and --dasha-rate-burst must not be negative")
	}
	operatorToken := os.Getenv("ONCECALL_OPERATOR_TOKEN")
	if err := app.CheckOperatorToken(operatorToken); err != nil {
		return err
	}
	url, migrateURL := os.Getenv("DATABASE_URL"), migrateDatabaseURL()
	if url == "" && migrateURL != "" {
		return errors.New("ONCECALL_MIGRATE_DATABASE_URL is set but DATABASE_URL is not: the embedded database needs neither; with your own PostgreSQL set DATABASE_URL too")
	}
	if url == "" && *requireURL {
		return errors.New("DATABASE_URL is not set and --require-database-url (ONCECALL_REQUIRE_DATABASE_URL) forbids the embedded database: point DATABASE_URL at your PostgreSQL, e.g. postgres://user:pass@host:5432/oncecall")
	}

	clusters, err := parseClusters(*clusterList)
	if err != nil {
		return err
	}
	if len(clusters) > 0 && url == "" {
		return errors.New("--clusters needs DATABASE_URL: the home cluster holds the directory of tenants")
	}

	providers, err := providersFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	rc, err := reconcileConfig()
	if err != nil {
		return err
	}
	sc, err := stepConfig()
	if err != nil {
		return err
	}
	cc, err := calendarsConfig(os.Getenv)
	if err != nil {
		return err
	}
	if *lease <= 0 {
		return errors.New("--lease must be positive")
	}
	var simulate []string
	if url == "" {
		// The embedded database is the demo: the provider simulator plays
		// the card processor and the SMS gateway that are not configured.
		simulate = app.DemoSimulated
	}
	console, err := consoleConfig(os.Getenv)
	if err != nil {
		return err
	}
	log := logger(stderr)
	stopTracing, err := startTracing(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	defer flushTraces(ctx, stopTracing, log)
	m, err := app.Start(ctx, app.Config{
		Addr: *addr, DatabaseURL: url, MigrateDatabaseURL: migrateURL, Clusters: clusters, DataDir: *dataDir, EmbeddedPort: *embeddedPort, Log: log,
		DashaWait: *dashaWait, DashaBudget: *dashaBudget,
		MaxBodyBytes: int64(*maxBody), ShutdownTimeout: *shutdown, MaxConns: int32(*maxConns), DBTimeouts: *timeouts,
		TenantDBRequests: fair.requests, TenantDBWait: fair.wait, DBWait: fair.dbWait,
		ReadHeaderTimeout: *readHeader, ReadTimeout: *read, WriteTimeout: *write, IdleTimeout: *idle,
		RateLimit: *rateLimit, RateBurst: *rateBurst, MetricsToken: *metricsToken,
		DashaRateLimit: *dashaRate, DashaRateBurst: *dashaBurst,
		Prune:         prune.Config{ResponseRetention: keep.response, ActionRetention: keep.action, BatchSize: keep.batch, Duty: keep.duty},
		PruneInterval: *pruneEvery,
		Core:          idem.Config{Lease: *lease, AnswerBytes: *answerBytes, AnswerAge: *answerAge},
		Providers:     providers, Simulate: simulate, Calendars: cc, Steps: sc, Reconcile: rc, ReconcileDisabled: *noReconcile,
		OperatorToken: operatorToken, Console: console, StripeWebhookSecret: os.Getenv("STRIPE_WEBHOOK_SECRET"),
		TwilioAuthToken: twilioStatusToken(os.Getenv), PublicURL: os.Getenv("ONCECALL_PUBLIC_URL"),
		LateResultURL: lateResultHosts(*lateHosts), Jobs: app.JobsConfig{LateWorkers: max(1, *lateWorkers)},
	})
	if err != nil {
		return err
	}
	if m.Embedded() != nil {
		if err := m.SeedDemo(ctx, stdout, selfCommand()); err != nil {
			m.Close()
			return err
		}
	}
	// Serve logs "serving" once it accepts requests; "stopped" follows
	// when the requests are drained and the database is closed.
	err = m.Serve(ctx)
	if cerr := m.Close(); cerr != nil {
		log.Warn().Err(cerr).Msg("stop the embedded database")
	}
	if err != nil {
		log.Error().Err(err).Msg("stopped")
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

// selfCommand is how the printed examples run oncecall again: the path it
// was started by, or "go run ./cmd/oncecall" when that is a go run build.
func selfCommand() string {
	self := os.Args[0]
	if strings.Contains(self, "go-build") {
		return "go run ./cmd/oncecall"
	}
	return self
}
