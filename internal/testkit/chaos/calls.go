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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/pgembed"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// CallsConfig describes a calls run: whole phone calls on the four voice
// platforms, played by simulated models against oncecall replicas under
// kills, a database restart and provider faults, then the audit of what
// every caller heard. Zero values take the defaults.
type CallsConfig struct {
	// Calls is how many calls are played. Default 2000.
	Calls int
	// Concurrency is how many calls run at once. Default 24.
	Concurrency int
	// Tenants is how many businesses the calls are spread over. Default 6.
	Tenants int
	// Duration, when set, ends the run phase early: no call starts after
	// it (the report counts the calls played).
	Duration time.Duration
	// Replicas is the number of oncecall processes. Default 3.
	Replicas int
	// KillEvery is the mean time between SIGKILLs of a random replica
	// while calls start. Default 4s.
	KillEvery time.Duration
	// PGOutage is how long PostgreSQL is down when it is restarted, once
	// 40% of the calls have started. Default 2s.
	PGOutage time.Duration
	// Settle bounds the wait for the reconcilers after the calls. Default 60s.
	Settle time.Duration
	// Seed makes the world, the scripts, the models' choices and the
	// kills repeatable (timing is not). Default: from the clock.
	Seed uint64
	// Only, when set, plays only these calls of the seed's scripts (the
	// world is the same): a failing history replayed on its own.
	Only []int
	// Binary is a built oncecall; empty builds cmd/oncecall.
	Binary string
	// Dir holds the database, the ledger, the logs and the histories.
	// Empty uses a temporary folder, removed after a passing run.
	Dir string
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Turn is the pause between a caller's turns. Default 100ms.
	Turn time.Duration
}

func (c *CallsConfig) defaults() {
	if c.Calls <= 0 {
		c.Calls = 2000
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 24
	}
	if c.Tenants <= 0 {
		c.Tenants = 6
	}
	if c.Replicas <= 0 {
		c.Replicas = 3
	}
	if c.KillEvery <= 0 {
		c.KillEvery = 4 * time.Second
	}
	if c.PGOutage <= 0 {
		c.PGOutage = 2 * time.Second
	}
	if c.Settle <= 0 {
		c.Settle = 60 * time.Second
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Turn <= 0 {
		c.Turn = 100 * time.Millisecond
	}
}

// RunCalls performs a calls run and audits it. The error is for a run
// that could not be carried out; a run that found broken promises returns
// a report whose OK is false.
func RunCalls(ctx context.Context, cfg CallsConfig) (rep CallsReport, err error) {
	cfg.defaults()
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Out, "calls: "+format+"\n", args...) }
	dir, temporary, err := runDir(cfg.Dir, "oncecall-calls-")
	if err != nil {
		return rep, err
	}
	if temporary {
		defer func() {
			if err == nil && rep.OK() {
				os.RemoveAll(dir)
			} else {
				logf("kept %s (database, ledger, logs, histories.txt)", dir)
			}
		}()
	}
	w := newCallWorld(cfg.Seed, scriptOptions{Calls: cfg.Calls, Tenants: cfg.Tenants})
	logf("seed %d: %d calls, %d at once, %d tenants, %d replicas, a kill every ~%v, PostgreSQL down for %v at 40%% of the calls; files in %s",
		cfg.Seed, cfg.Calls, cfg.Concurrency, cfg.Tenants, cfg.Replicas, cfg.KillEvery, cfg.PGOutage, dir)

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
	if err := seedCalls(ctx, db.New(pool), w); err != nil {
		return rep, err
	}
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
	rs := &replicas{bin: bin, dir: dir, env: callsEnv(dbURL, sim.URL()), slots: make([]*replica, cfg.Replicas)}
	defer rs.stopAll()
	for i := range cfg.Replicas {
		if err := rs.start(ctx, i, 30*time.Second); err != nil {
			return rep, err
		}
	}
	logf("%d replicas serving, simulator at %s", cfg.Replicas, sim.URL())

	var pickMu sync.Mutex
	prng := rand.New(rand.NewPCG(cfg.Seed, 1<<35))
	var outage outageWindow
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	r := &callRunner{
		seed: cfg.Seed, hc: hc, turn: cfg.Turn, statusEvery: time.Second, statusFor: 30 * time.Second,
		base: func() string {
			pickMu.Lock()
			defer pickMu.Unlock()
			return rs.pick(prng)
		},
		live: rs.serves, outage: outage.covers, fed: make(chan struct{}),
	}
	order := playOrder(w, cfg.Only)
	total := 0
	for _, unit := range order {
		total += len(unit)
	}

	// The run phase: calls, with provider faults, kills and one database
	// restart while they start.
	var faultIDs []int64
	for _, rule := range callsFaultRules() {
		got, err := admin.AddFault(ctx, rule)
		if err != nil {
			return rep, err
		}
		faultIDs = append(faultIDs, got.ID)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(runCtx, cfg.Duration)
		defer cancel()
	}
	var started atomic.Int64
	allStarted := make(chan struct{})
	var chaos sync.WaitGroup
	var chaosErr error
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		chaosErr = errors.Join(chaosErr, err)
	}
	chaosCtx, stopChaos := context.WithCancel(ctx)
	go func() {
		select {
		case <-allStarted:
		case <-runCtx.Done():
		}
		stopChaos()
	}()
	chaos.Go(func() {
		krng := rand.New(rand.NewPCG(cfg.Seed, 1<<32))
		for {
			jitter := time.Duration(krng.Int64N(int64(cfg.KillEvery)/2)) - cfg.KillEvery/4
			if !sleep(chaosCtx, cfg.KillEvery+jitter) {
				return
			}
			if slot := rs.killOne(krng); slot >= 0 {
				if err := rs.start(ctx, slot, 60*time.Second); err != nil {
					fail(err)
					return
				}
			}
		}
	})
	pgRestarts := 0
	chaos.Go(func() {
		for started.Load() < int64(total)*2/5 {
			if !sleep(chaosCtx, 100*time.Millisecond) {
				return
			}
		}
		logf("stopping PostgreSQL for %v", cfg.PGOutage)
		outage.begin()
		if err := pg.Stop(); err != nil {
			fail(err)
			return
		}
		sleep(ctx, cfg.PGOutage)
		if err := pg.Restart(context.WithoutCancel(ctx)); err != nil {
			fail(fmt.Errorf("restart PostgreSQL: %w", err))
			return
		}
		outage.end()
		pgRestarts++
		logf("PostgreSQL is back")
	})
	chaos.Go(func() {
		for sleep(chaosCtx, 10*time.Second) {
			logf("%d of %d calls started, %d tool calls, %d kills, %d replicas up", started.Load(), total, r.toolCalls.Load(), rs.killCount(), rs.live())
		}
	})

	var models []*callModel
	played := make(chan struct{})
	go func() {
		defer close(played)
		models = playCalls(ctx, runCtx, r, w, order, cfg.Concurrency, func(n int) { started.Add(int64(n)) })
	}()
	<-r.fed
	close(allStarted)
	chaos.Wait()
	if chaosErr != nil {
		stopRun()
		<-played
		return rep, chaosErr
	}
	// Calm: no more faults or kills; the calls under way finish.
	var applied int
	if rules, err := admin.Faults(ctx); err == nil {
		for _, rule := range rules {
			applied += rule.Applied
		}
	}
	for _, id := range faultIDs {
		if err := admin.DeleteFault(ctx, id); err != nil {
			return rep, fmt.Errorf("clear faults: %w", err)
		}
	}
	logf("all %d calls started after %d kills: faults cleared, the calls under way finishing", started.Load(), rs.killCount())
	<-played
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}

	// Settle: the reconcilers finish every action, or flag it; then the
	// models check back on what they last heard was pending.
	settled := time.Now()
	left := -1
	for end := settled.Add(cfg.Settle); time.Now().Before(end); {
		if left, err = unsettledCalls(ctx, pool, w); err == nil && left == 0 {
			break
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return rep, ctx.Err()
		}
	}
	logf("settle: %d unfinished after %v", left, time.Since(settled).Round(time.Millisecond))
	lateChecks(ctx, models, cfg.Concurrency)

	ledger, err := admin.Ledger(ctx, "")
	if err != nil {
		return rep, err
	}
	truth, err := loadCallsTruth(ctx, pool, w, ledger)
	if err != nil {
		return rep, err
	}
	rep = judgeCalls(w, truth, len(cfg.Only) > 0)
	rep.Seed, rep.ToolCalls = cfg.Seed, int(r.toolCalls.Load())
	for _, p := range callPlatforms {
		if rep.Answers[p] > 0 {
			rep.Platforms++
		}
	}
	rep.Kills, rep.PGRestarts, rep.ProviderFaults = rs.killCount(), pgRestarts, applied
	rep.Faults = rep.Kills + rep.PGRestarts + rep.ProviderFaults
	if len(rep.Histories) > 0 {
		path := filepath.Join(dir, "histories.txt")
		if err := os.WriteFile(path, []byte(strings.Join(rep.Histories, "\n")), 0o644); err != nil {
			return rep, err
		}
		logf("the histories of the %d calls with a violation are in %s", len(rep.Histories), path)
	}
	return rep, nil
}

// playCalls plays the calls of order, concurrency at once (a pair as one
// unit, its two calls at the same time), starting none once runCtx ends;
// started is told how many calls each unit starts. It returns the models
// of the calls played, by call number. r.fed is closed once every unit
// has been handed to a player.
func playCalls(ctx, runCtx context.Context, r *callRunner, w *callWorld, order [][]*callScript, concurrency int, started func(int)) []*callModel {
	models := make([]*callModel, len(w.Calls))
	units := make(chan []*callScript)
	var players sync.WaitGroup
	for range concurrency {
		players.Go(func() {
			for unit := range units {
				var wg sync.WaitGroup
				for _, c := range unit {
					m := &callModel{r: r, c: c}
					models[c.N] = m
					wg.Go(func() { m.play(ctx) })
				}
				wg.Wait()
			}
		})
	}
feed:
	for _, unit := range order {
		select {
		case units <- unit:
			started(len(unit))
		case <-runCtx.Done():
			break feed
		}
	}
	close(units)
	close(r.fed)
	players.Wait()
	return models
}

// lateChecks has every played call check back, once the run has settled,
// on the intents whose last answer was pending.
func lateChecks(ctx context.Context, models []*callModel, concurrency int) {
	var late sync.WaitGroup
	todo := make(chan *callModel)
	for range concurrency {
		late.Go(func() {
			for m := range todo {
				m.lateCheck(ctx)
			}
		})
	}
	for _, m := range models {
		if m != nil && m.p != nil {
			todo <- m
		}
	}
	close(todo)
	late.Wait()
}

// playOrder is the calls to play, in order, each with the call it runs
// together with (a pair plays as one unit).
func playOrder(w *callWorld, only []int) [][]*callScript {
	want := map[int]bool{}
	for _, n := range only {
		want[n] = true
	}
	var order [][]*callScript
	done := map[int]bool{}
	for _, c := range w.Calls {
		if done[c.N] || (len(only) > 0 && !want[c.N] && (c.Partner == nil || !want[c.Partner.N])) {
			continue
		}
		unit := []*callScript{c}
		done[c.N] = true
		if c.Partner != nil {
			unit = append(unit, c.Partner)
			done[c.Partner.N] = true
		}
		order = append(order, unit)
	}
	return order
}

// callsFaultRules are the chaos run's provider faults, plus payments the
// provider declines now and then (a charge rejected by the card network),
// and writes slower than the provider timeout of a calls run (a caller's
// duplicates wait on them).
func callsFaultRules() []providersim.Rule {
	p := func(v float64) *float64 { return &v }
	return append(faultRules(),
		providersim.Rule{Capability: "payments", Fault: "reject=CARD_DECLINED", Probability: p(0.03)},
		providersim.Rule{Capability: "*", Fault: "delay=" + (callsProviderTimeout + time.Second).String(), Probability: p(0.03)},
	)
}

// callsProviderTimeout is the replicas' provider timeout in a calls run:
// the default one, so that a slow write keeps a call, and its
// duplicates, waiting as long as it would in production.
const callsProviderTimeout = 5 * time.Second

// callsEnv configures the replicas of a calls run as replicaEnv does the
// chaos run's, with three differences: bookings stay on oncecall's own
// calendar (bookings by service at a time, moves and cancels need it),
// while payments and messaging go to the simulator with its faults; a
// voice call's wait for a running attempt of the same action, and the
// provider timeout, are the defaults (5s), as callers meet them.
func callsEnv(dbURL, simURL string) []string {
	var env []string
	for _, kv := range replicaEnv(dbURL, simURL, false, false) {
		switch name, _, _ := strings.Cut(kv, "="); {
		case strings.HasPrefix(name, "ONCECALL_PROVIDER_CALENDAR_"), name == "ONCECALL_DASHA_WAIT":
			continue
		case strings.HasPrefix(name, "ONCECALL_PROVIDER_") && strings.HasSuffix(name, "_TIMEOUT"):
			kv = name + "=" + callsProviderTimeout.String()
		}
		env = append(env, kv)
	}
	return env
}

// unsettledCalls counts the actions of w's tenants still running or
// unknown without an operator flag, and their unfinished follow-up steps.
func unsettledCalls(ctx context.Context, pool *pgxpool.Pool, w *callWorld) (int, error) {
	n := 0
	for _, t := range w.Tenants {
		id, err := uuid.Parse(t.ID)
		if err != nil {
			return 0, err
		}
		k, err := unsettled(ctx, pool, []uuid.UUID{id})
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// outageWindow is when PostgreSQL was down, with a margin after it for the
// pools to reconnect: a 503 within it is the outage's, not a lockout.
type outageWindow struct {
	mu       sync.Mutex
	from, to time.Time
}

const outageMargin = 3 * time.Second

func (o *outageWindow) begin() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.from = time.Now()
}

func (o *outageWindow) end() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.to = time.Now()
}

func (o *outageWindow) covers(t time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.from.IsZero() || t.Before(o.from.Add(-time.Second)):
		return false
	case o.to.IsZero():
		return true
	}
	return t.Before(o.to.Add(outageMargin))
}

// ParseOnly reads a comma-separated list of call numbers (--only).
func ParseOnly(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--only: %q is not a call number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
