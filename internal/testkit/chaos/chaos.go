// Package chaos runs oncecall the way production hurts it and audits the
// promise: three `oncecall serve` replicas on one PostgreSQL, the provider
// simulator serving calendar, payments and messaging with faults, and a
// fleet of callers behaving like Dasha and like REST clients. Meanwhile a
// random replica is SIGKILLed every few seconds and PostgreSQL is restarted
// once. After the run settles, what every caller was told is checked
// against the provider's ledger and oncecall's tables: no logical action
// written twice, none told confirmed without exactly one write, none told
// confirmed that ends rejected or unwritten. cmd/chaos and a Go test run it.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/pgembed"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// Config describes a run. Zero values take the defaults.
type Config struct {
	// Duration of the run phase (callers, faults, kills). Default 60s.
	Duration time.Duration
	// Clients is the number of concurrent callers. Default 16.
	Clients int
	// Replicas is the number of oncecall processes. Default 3.
	Replicas int
	// KillEvery is the mean time between SIGKILLs of a random replica.
	// Default 4s.
	KillEvery time.Duration
	// PGRestartAt is when, into the run phase, PostgreSQL is stopped for
	// PGOutage and started again. Defaults 40% of Duration and 2s.
	PGRestartAt, PGOutage time.Duration
	// Settle bounds the wait, after the run phase, for every action to be
	// finished or flagged for an operator. Default 60s.
	Settle time.Duration
	// Slots is the number of bookable slots created (one per booking);
	// when they run out callers send messages instead. Default 150 per
	// second of Duration, at least 3000.
	Slots int
	// Members is the number of customers created for points changes (one
	// per change, so that each balance shows what its change did); when
	// they run out callers send messages instead. Default as many as Slots.
	Members int
	// Seed makes the choices of callers and of the chaos repeatable
	// (timing is not). Default: from the clock.
	Seed uint64
	// Binary is a built oncecall; empty builds cmd/oncecall.
	Binary string
	// Dir holds the database, the ledger and every process's log. Empty
	// uses a temporary folder, removed after a passing run and kept (and
	// named in the output) after a failing one.
	Dir string
	// Out receives progress lines; nil discards them.
	Out io.Writer

	// TrustMessagingKeys tells the replicas that the messaging provider
	// honours idempotency keys, which it does not: a misconfiguration under
	// which every resend is a second message. It exists to prove that the
	// audit catches duplicates; a real run leaves it false.
	TrustMessagingKeys bool
	// Stripe serves payments with the Stripe adapter (stripe-go) against
	// the simulator's Stripe mode, with the same faults; the audit counts
	// the captures of Stripe's PaymentIntents.
	Stripe bool
	// Twilio serves SMS with the Twilio adapter (twilio-go) against the
	// simulator's Twilio mode, with the same faults and duplicated, early
	// and stray status callbacks; the audit counts Twilio's messages.
	Twilio bool
	// Calendars adds three tenants whose appointments live in their own
	// calendars (Google Calendar, Microsoft 365, Cal.com), each a fake run
	// as a process with faults (cmd/calendarsim); half the bookings go to
	// them, through oncecall's calendar adapters, and the audit counts the
	// fakes' events.
	Calendars bool
}

func (c *Config) defaults() {
	if c.Duration <= 0 {
		c.Duration = 60 * time.Second
	}
	if c.Clients <= 0 {
		c.Clients = 16
	}
	if c.Replicas <= 0 {
		c.Replicas = 3
	}
	if c.KillEvery <= 0 {
		c.KillEvery = 4 * time.Second
	}
	if c.PGRestartAt <= 0 {
		c.PGRestartAt = c.Duration * 2 / 5
	}
	if c.PGOutage <= 0 {
		c.PGOutage = 2 * time.Second
	}
	if c.Settle <= 0 {
		c.Settle = 60 * time.Second
	}
	if c.Slots <= 0 {
		c.Slots = max(3000, int(c.Duration.Seconds()*150))
	}
	if c.Members <= 0 {
		c.Members = c.Slots
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
}

// Provider settings of the replicas. Writes time out after providerTimeout,
// and some simulated delays are longer: those writes commit after oncecall
// gave up. Messaging is a provider without idempotency support (the
// simulator ignores its keys): recovery must go by lookup, and lookups lag
// up to lookupLag behind writes. Its declared visibility delay covers the
// longest write delay plus that lag.
const (
	providerTimeout  = time.Second
	longDelay        = 1500 * time.Millisecond
	lookupLag        = time.Second
	messagingVisible = 4 * time.Second
)

// faultRules are the simulator's faults during the run phase.
func faultRules() []providersim.Rule {
	p := func(v float64) *float64 { return &v }
	return []providersim.Rule{
		{Capability: "*", Fault: "drop_response", Probability: p(0.05)},
		{Capability: "*", Fault: "fail_before_commit", Probability: p(0.04)},
		{Capability: "*", Fault: "fail_after_commit", Probability: p(0.04)},
		{Capability: "*", Fault: "delay=" + longDelay.String(), Probability: p(0.04)},
		{Capability: "*", Fault: "delay=200ms", Probability: p(0.05)},
		{Capability: "*", Fault: "lookup_lag=" + lookupLag.String(), On: "any", Probability: p(0.5)},
		{Capability: "*", Fault: "fail_before_commit", On: "lookup", Probability: p(0.1)},
		{Capability: "*", Fault: "drop_response", On: "lookup", Probability: p(0.05)},
	}
}

// Run performs a chaos run and audits it. The error is for a run that could
// not be carried out; a run that found broken promises returns a Report
// whose OK is false.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	cfg.defaults()
	out := cfg.Out
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "chaos: "+format+"\n", args...)
	}

	dir, temporary, err := runDir(cfg.Dir, "oncecall-chaos-")
	if err != nil {
		return rep, err
	}
	if temporary {
		defer func() {
			if err == nil && rep.OK() {
				os.RemoveAll(dir)
			} else {
				logf("kept %s (database, ledger and logs)", dir)
			}
		}()
	}
	logf("seed %d, %d replicas, %d clients, run %v, a kill every ~%v, PostgreSQL down for %v at %v; files in %s",
		cfg.Seed, cfg.Replicas, cfg.Clients, cfg.Duration, cfg.KillEvery, cfg.PGOutage, cfg.PGRestartAt, dir)

	// PostgreSQL, migrated, with a tenant, customers, slots and members.
	pgLog, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return rep, err
	}
	defer pgLog.Close()
	pg, err := pgembed.Start(ctx, pgembed.Config{DataDir: filepath.Join(dir, "pgdata"), Fast: true, Log: pgLog})
	if err != nil {
		return rep, err
	}
	defer pg.Stop() //nolint:errcheck // the run is over
	dbURL := pg.URL(pgembed.AppDatabase)
	if err := app.Migrate(ctx, dbURL); err != nil {
		return rep, err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return rep, err
	}
	defer pool.Close()
	w, err := seed(ctx, db.New(pool), cfg.Slots, cfg.Members)
	if err != nil {
		return rep, fmt.Errorf("seed the database: %w", err)
	}
	if cfg.Calendars {
		logf("starting the calendar fakes")
		if w.calendars, err = startCalendars(ctx, dir, db.New(pool)); err != nil {
			return rep, err
		}
		defer stopCalendars(w.calendars)
	}

	// The provider simulator, in this process, with its ledger on disk.
	sim, stopSim, err := startSimulator(ctx, dir, "127.0.0.1:0")
	if err != nil {
		return rep, err
	}
	defer stopSim()
	admin := providersim.Admin{BaseURL: sim.URL()}

	bin := cfg.Binary
	if bin == "" {
		logf("building oncecall")
		if bin, err = build(ctx, dir); err != nil {
			return rep, err
		}
	}
	rs := &replicas{bin: bin, dir: dir, env: replicaEnv(dbURL, sim.URL(), cfg.TrustMessagingKeys, cfg.Stripe), slots: make([]*replica, cfg.Replicas)}
	defer rs.stopAll()
	if cfg.Calendars {
		rs.env = append(rs.env, calendarEnv(w.calendars)...)
	}
	var callbacks *callbackProxy
	if cfg.Twilio {
		if callbacks, err = startCallbackProxy(cfg.Seed); err != nil {
			return rep, err
		}
		defer callbacks.close()
		callbacks.rs.Store(rs)
		rs.env = append(rs.env, twilioEnv(callbacks.url)...)
		sim.SetTwilioCallbacks(providersim.TwilioCallbacks{Duplicate: true, BeforeAnswer: true})
	}
	for i := range cfg.Replicas {
		if err := rs.start(ctx, i, 30*time.Second); err != nil {
			return rep, err
		}
	}
	logf("%d replicas serving, simulator at %s", cfg.Replicas, sim.URL())

	f := &fleet{
		replicas: rs, hc: newHTTPClient(), apiKey: w.apiKey, org: w.org, run: strconv.FormatUint(cfg.Seed%1e6, 10),
		customers: w.customers, slots: w.slots, members: w.members,
	}
	defer f.hc.CloseIdleConnections()
	for _, side := range w.calendars {
		for _, id := range side.slots {
			f.calSlots = append(f.calSlots, calSlot{id: id, acct: side.acct})
		}
	}
	// The calendar tenants' slots in a random order, so that every
	// provider's get booked.
	rand.New(rand.NewPCG(cfg.Seed, 1<<35)).Shuffle(len(f.calSlots), func(i, j int) { f.calSlots[i], f.calSlots[j] = f.calSlots[j], f.calSlots[i] })

	// The run phase.
	var faultIDs []int64
	for _, r := range faultRules() {
		got, err := admin.AddFault(ctx, r)
		if err != nil {
			return rep, err
		}
		faultIDs = append(faultIDs, got.ID)
	}
	for _, side := range w.calendars {
		for _, r := range calendarFaults() {
			if _, err := side.fault(ctx, r); err != nil {
				return rep, err
			}
		}
	}
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for i := range cfg.Clients {
		crng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1))
		clients.Go(func() { f.client(ctx, stop, crng) })
	}
	chaosCtx, stopChaos := context.WithTimeout(ctx, cfg.Duration)
	defer stopChaos()
	var chaos sync.WaitGroup
	var chaosErr error
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		chaosErr = errors.Join(chaosErr, err)
	}
	chaos.Go(func() {
		krng := rand.New(rand.NewPCG(cfg.Seed, 1<<32))
		for {
			jitter := time.Duration(krng.Int64N(int64(cfg.KillEvery)/2)) - cfg.KillEvery/4
			if !sleep(chaosCtx, cfg.KillEvery+jitter) {
				return
			}
			slot := rs.killOne(krng)
			if slot < 0 {
				continue
			}
			// Restarting is part of the chaos: it may overlap the database
			// outage, and the caller keeps going meanwhile.
			if err := rs.start(ctx, slot, 60*time.Second); err != nil {
				fail(err)
				return
			}
		}
	})
	pgRestarts := 0
	chaos.Go(func() {
		if !sleep(chaosCtx, cfg.PGRestartAt) {
			return
		}
		logf("stopping PostgreSQL for %v", cfg.PGOutage)
		if err := pg.Stop(); err != nil {
			fail(err)
			return
		}
		sleep(ctx, cfg.PGOutage)
		if err := pg.Restart(context.WithoutCancel(ctx)); err != nil {
			fail(fmt.Errorf("restart PostgreSQL: %w", err))
			return
		}
		pgRestarts++
		logf("PostgreSQL is back")
	})
	chaos.Go(func() {
		for sleep(chaosCtx, 5*time.Second) {
			logf("%d actions, %d attempts, %d kills, %d replicas up",
				f.seq.Load(), f.attempts.Load(), rs.killCount(), rs.live())
			if callbacks != nil {
				callbacks.strayCallback(chaosCtx, admin) //nolint:errcheck // a stray callback that does not arrive proves nothing either way
			}
		}
	})
	<-chaosCtx.Done()
	chaos.Wait()
	if chaosErr != nil {
		close(stop)
		clients.Wait()
		return rep, chaosErr
	}
	if ctx.Err() != nil {
		close(stop)
		clients.Wait()
		return rep, ctx.Err()
	}

	// Calm: no more faults or kills; callers finish what they started.
	for _, id := range faultIDs {
		if err := admin.DeleteFault(ctx, id); err != nil {
			return rep, fmt.Errorf("clear faults: %w", err)
		}
	}
	for _, side := range w.calendars {
		if err := side.clearFaults(ctx); err != nil {
			return rep, err
		}
	}
	close(stop)
	logf("run phase over after %d kills: faults cleared, callers finishing", rs.killCount())
	clients.Wait()

	// Settle: the reconcilers finish every action, or flag it.
	settled := time.Now()
	end := settled.Add(cfg.Settle)
	left := -1
	for time.Now().Before(end) {
		if left, err = unsettled(ctx, pool, w.tenants()); err == nil && left == 0 {
			break
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return rep, ctx.Err()
		}
	}
	logf("settle: %d unfinished after %v", left, time.Since(settled).Round(time.Millisecond))
	f.lateCheck(ctx, rand.New(rand.NewPCG(cfg.Seed, 1<<33)))

	ledger, err := admin.Ledger(ctx, "")
	if err != nil {
		return rep, err
	}
	if cfg.Stripe {
		pis, err := admin.StripeLedger(ctx)
		if err != nil {
			return rep, err
		}
		ledger = append(ledger, stripeCaptures(pis)...)
	}
	if cfg.Twilio {
		msgs, err := admin.TwilioLedger(ctx)
		if err != nil {
			return rep, err
		}
		sends, err := twilioSends(ctx, pool, w.tenants(), msgs)
		if err != nil {
			return rep, err
		}
		ledger = append(ledger, sends...)
	}
	calendarEvents := 0
	for _, side := range w.calendars {
		events, err := side.writes(ctx)
		if err != nil {
			return rep, err
		}
		ledger = append(ledger, events...)
		calendarEvents += len(events)
	}
	rep, err = audit(ctx, pool, w.tenants(), ledger, f.all())
	if err != nil {
		return rep, err
	}
	rep.CalendarEvents = calendarEvents
	rep.Kills, rep.PGRestarts = rs.killCount(), pgRestarts
	return rep, nil
}

// runDir is the folder a run keeps its files in: dir, made when missing,
// or a new temporary one (temporary true), which the run removes when it
// passes. PostgreSQL runs as the postgres account when we are root: it
// must be able to enter the folder.
func runDir(dir, prefix string) (_ string, temporary bool, err error) {
	if dir == "" {
		if dir, err = os.MkdirTemp("", prefix); err != nil {
			return "", false, err
		}
		temporary = true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	return dir, temporary, os.Chmod(dir, 0o755)
}

// startSimulator starts the provider simulator in this process on addr,
// with its ledger and log in dir, and messaging without idempotency support
// for the whole run; stop ends it.
func startSimulator(ctx context.Context, dir, addr string) (sim *providersim.Main, stop func(), err error) {
	simLog, err := os.Create(filepath.Join(dir, "providersim.log"))
	if err != nil {
		return nil, nil, err
	}
	sim, err = providersim.Start(ctx, providersim.Config{
		Addr: addr, Ledger: filepath.Join(dir, "ledger.jsonl"),
		Log: zerolog.New(simLog).With().Timestamp().Logger(),
	})
	if err != nil {
		simLog.Close()
		return nil, nil, err
	}
	simCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- sim.Serve(simCtx) }()
	stop = func() { stopServing(); <-served; sim.Close(); simLog.Close() }
	admin := providersim.Admin{BaseURL: sim.URL()}
	if _, err := admin.AddFault(ctx, providersim.Rule{Capability: provider.Messaging, Fault: "ignore_keys"}); err != nil {
		stop()
		return nil, nil, err
	}
	return sim, stop, nil
}

// replicaEnv configures every replica: the shared database, the simulator
// for calendar, payments and messaging (crm stays local), short leases and
// timeouts so recovery happens within the run.
func replicaEnv(dbURL, simURL string, trustMessagingKeys, stripe bool) []string {
	env := []string{
		"DATABASE_URL=" + dbURL,
		"LOG_LEVEL=info",
		"ONCECALL_LEASE=2s",
		"ONCECALL_RECONCILE_INTERVAL=250ms",
		"ONCECALL_RECONCILE_LEASE=1s",
		// Re-checks back off to at most 5s, so every unresolved step is
		// checked again within the settle phase.
		"ONCECALL_STEP_MAX_BACKOFF=5s",
		"ONCECALL_RATE_LIMIT=0",
		"ONCECALL_PRUNE_INTERVAL=0",
		"ONCECALL_DASHA_WAIT=1s",
		"ONCECALL_DB_MAX_CONNS=10",
		"ONCECALL_PROVIDER_MESSAGING_HONOURS_KEYS=" + strconv.FormatBool(trustMessagingKeys),
		"ONCECALL_PROVIDER_MESSAGING_VISIBILITY_DELAY=" + messagingVisible.String(),
	}
	for _, c := range []string{"CALENDAR", "PAYMENTS", "MESSAGING"} {
		env = append(env, "ONCECALL_PROVIDER_"+c+"_URL="+simURL, "ONCECALL_PROVIDER_"+c+"_TIMEOUT="+providerTimeout.String())
	}
	if stripe {
		// The payments URL is then Stripe's API base: the simulator's
		// Stripe mode.
		env = append(env, "ONCECALL_PROVIDER_PAYMENTS=stripe", "STRIPE_SECRET_KEY=sk_test_chaos")
	}
	return fleetEnv(env)
}

// world is what the callers use: the tenant's API key, its customers, its
// free slots and the customers kept for points changes; with calendars,
// the tenants whose appointments live in their own calendars.
type world struct {
	tenant    uuid.UUID
	apiKey    string
	org       string
	customers []string
	slots     []string
	members   []string
	calendars []*calendarSide
}

// tenants are the run's tenants: the main one and the calendar tenants.
func (w world) tenants() []uuid.UUID {
	out := []uuid.UUID{w.tenant}
	for _, c := range w.calendars {
		out = append(out, c.tenant)
	}
	return out
}

func seed(ctx context.Context, store *db.Store, slots, members int) (world, error) {
	w := world{org: "chaos-org"}
	t, key, err := store.CreateTenant(ctx, "chaos", w.org)
	if err != nil {
		return w, err
	}
	w.tenant, w.apiKey = t.ID, key
	for i := range 20 {
		c, err := store.CreateCustomer(ctx, db.NewCustomer{
			TenantID: t.ID, Name: fmt.Sprintf("Caller %d", i), Phone: fmt.Sprintf("+1555010%04d", i),
		})
		if err != nil {
			return w, err
		}
		w.customers = append(w.customers, c.ID.String())
	}
	// One slot per booking, an hour each, from tomorrow on.
	start := time.Now().Add(24 * time.Hour).Truncate(time.Hour)
	rows := make([][]any, slots)
	for i := range rows {
		id, err := uuid.NewV7()
		if err != nil {
			return w, err
		}
		at := start.Add(time.Duration(i) * time.Hour)
		rows[i] = []any{id, t.ID, at, at.Add(time.Hour)}
		w.slots = append(w.slots, id.String())
	}
	if _, err := store.Pool().CopyFrom(ctx, pgx.Identifier{"slots"}, []string{"id", "tenant_id", "starts_at", "ends_at"}, pgx.CopyFromRows(rows)); err != nil {
		return w, err
	}
	// One customer per points change, with no points yet.
	rows = make([][]any, members)
	for i := range rows {
		id, err := uuid.NewV7()
		if err != nil {
			return w, err
		}
		rows[i] = []any{id, t.ID, fmt.Sprintf("Member %d", i)}
		w.members = append(w.members, id.String())
	}
	_, err = store.Pool().CopyFrom(ctx, pgx.Identifier{"customers"}, []string{"id", "tenant_id", "name"}, pgx.CopyFromRows(rows))
	return w, err
}
