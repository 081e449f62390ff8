package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
)

// The bench's own pool (fixtures, ceiling, select, checks) has as many
// connections as the server's default pool (app.DefaultMaxConns), so the
// SQL-only scenarios get no more database connections than the server has.

// bench is one benchmark session: the database, the servers under test and
// the results so far.
type bench struct {
	cfg            config
	stdout, stderr io.Writer
	warmup         time.Duration
	// noCheckpoint: CHECKPOINT failed once (no right to it); not tried again.
	noCheckpoint bool
	// noHeapCounts: oncecall's /metrics could not be read once (said once).
	noHeapCounts bool

	pool    *pgxpool.Pool
	store   *db.Store
	base    string // oncecall's base URL
	bareURL string
	// bareControl is the baseline process's control URL (empty when the
	// baseline runs in this process).
	bareControl string
	client      *http.Client
	// bareKeys authenticates the baseline handler like the server's key
	// cache does on a hit.
	bareKeys *keyMap
	// serverRSS returns the server's peak RSS in MiB; ok is false when it
	// cannot be known (a remote --url).
	serverRSS func() (mib float64, ok bool)
	rssNote   string

	closers []func() error
	// parts are the processes whose CPU time each run accounts for.
	parts []part

	maxRPS float64  // fastest booking rate seen, to size slot supplies
	grown  *fixture // the tenant holding the preloaded actions
	// selected is the tenant whose actions select reads, and their keys.
	selected     *fixture
	selectedKeys []string
	// firsts and peerFirsts are this round's first executions, which
	// replay and peer_replay send again.
	firsts, peerFirsts []sentBooking
	// alongside, when set, runs beside the next measured run from the
	// moment its window opens (after the warm-up) until the window ends,
	// when its context is cancelled; load clears it and waits for it to
	// return before it returns (prune.go).
	alongside func(ctx context.Context)
	// round is the round running, from 1.
	round      int
	results    []result
	violations []string
	// load is the machine's load average when the run started and ended.
	machineLoad struct{ before, after loadAvg }
}

// result is one scenario at one concurrency in one round.
type result struct {
	name        string
	concurrency int
	round       int
	stats
	skipped bool
	note    string
	// over is an overload run's own figures (overload.go).
	over *overloadFigures
	// prune is a prune run's own figures (prune.go).
	prune *pruneFigures
}

func start(ctx context.Context, cfg config, stdout, stderr io.Writer) (_ *bench, err error) {
	b := &bench{
		cfg: cfg, stdout: stdout, stderr: stderr, bareKeys: newKeyMap(),
		warmup: min(cfg.duration/5, time.Second),
	}
	b.machineLoad.before = loadAverage()
	defer func() {
		if err != nil {
			b.close()
		}
	}()

	dbURL := cfg.databaseURL
	if dbURL == "" {
		dir, err := os.MkdirTemp("", "oncecall-bench-")
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, func() error { return os.RemoveAll(dir) })
		// When run as root the database runs as the postgres account, which
		// must be able to enter the folder.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		b.logf("starting an embedded PostgreSQL in %s (durable settings: fsync and synchronous_commit on)", dir)
		pg, err := app.StartEmbedded(ctx, filepath.Join(dir, "data"), zerolog.Nop())
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, pg.Stop)
		dbURL = pg.URL("oncecall")
	}
	// The harness's own pool bulk-loads and vacuums: no statement timeout.
	b.pool, err = app.OpenPool(ctx, dbURL, "", app.DefaultMaxConns(), db.Timeouts{Statement: -1})
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() error { b.pool.Close(); return nil })
	b.store = db.New(b.pool)
	b.parts = append(b.parts, part{name: "client", pid: os.Getpid()})
	if pid, ok := b.postmaster(ctx); ok {
		b.parts = append(b.parts, part{name: "postgres", pid: pid, tree: true})
	}

	switch {
	case cfg.url == "" && cfg.server == serverProcess:
		if err := b.startProcess(ctx, dbURL); err != nil {
			return nil, err
		}
	case cfg.url == "":
		if err := b.startServer(ctx, dbURL); err != nil {
			return nil, err
		}
	default:
		b.base = cfg.url
		b.serverRSS, b.rssNote = remoteRSS(cfg.url)
	}
	if _, err := b.pool.Exec(ctx, peerSchema); err != nil {
		return nil, fmt.Errorf("create the peer's table: %w", err)
	}
	if cfg.server == serverInProcess && cfg.url == "" {
		err = b.startBare()
	} else {
		err = b.startBareProcess(ctx, dbURL)
	}
	if err != nil {
		return nil, err
	}
	b.client = &http.Client{Transport: &http.Transport{
		MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
		DisableCompression: true,
	}, Timeout: time.Minute}
	return b, nil
}

// startServer runs oncecall in this process (--server inprocess) with its
// default configuration on a database that is durable, as in production.
// Its logs are formatted as in production and discarded. app.Config's rate
// limit is off unless set; the tenant's share of the pool is the whole pool,
// as for the process.
func (b *bench) startServer(ctx context.Context, dbURL string) error {
	cfg := app.Config{
		Addr: "127.0.0.1:0", DatabaseURL: dbURL, TenantDBRequests: int(app.DefaultMaxConns()),
		Log: zerolog.New(io.Discard).With().Timestamp().Logger(),
	}
	switch {
	case b.cfg.answerBytes == 0:
		cfg.Core.AnswerBytes = -1 // none
	case b.cfg.answerBytes > 0:
		cfg.Core.AnswerBytes = b.cfg.answerBytes
	}
	m, err := app.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start oncecall: %w", err)
	}
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- m.Serve(srvCtx) }()
	b.closers = append(b.closers, func() error {
		cancel()
		err := <-done
		return errors.Join(err, m.Close())
	})
	b.base = "http://" + m.Addr()
	b.serverRSS = func() (float64, bool) { return peakRSS("self") }
	b.rssNote = "oncecall runs inside the bench process, so this includes the load generator"
	return nil
}

// startBare runs the baseline handler in this process, on a port of its
// own, when oncecall runs in this process too (--server inprocess). Its access
// lines go through a pipe that is drained, as `oncecall serve`'s do, so
// writing them costs what it costs the server.
func (b *bench) startBare() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		return err
	}
	go io.Copy(io.Discard, logR) //nolint:errcheck // ends when the pipe closes
	b.closers = append(b.closers, func() error { return errors.Join(logW.Close(), logR.Close()) })
	srv := bareServer(newBare(b.store, b.bareKeys, zerolog.New(logW).With().Timestamp().Logger()))
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed at close
	b.closers = append(b.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	})
	b.bareURL = "http://" + ln.Addr().String()
	return nil
}

// bareServer serves the baseline stack with the server's HTTP timeouts.
func bareServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 32 << 10,
	}
}

// close stops what start started, in reverse order.
func (b *bench) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		if err := b.closers[i](); err != nil {
			b.logf("cleanup: %v", err)
		}
	}
	b.closers = nil
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.stderr, "bench: "+format+"\n", args...)
}

// runAll runs the rounds: each runs the chosen scenarios in the same order
// at one concurrency after the other, so that the scenarios a ratio
// compares run next to each other (scenarioOrder). The actions select
// reads and grown's preload are made before the first round, so that every
// round runs on the same database.
func (b *bench) runAll(ctx context.Context) error {
	if slices.Contains(b.cfg.scenarios, "select") {
		if err := b.prepareSelect(ctx); err != nil {
			return fmt.Errorf("select's actions: %w", err)
		}
	}
	if slices.Contains(b.cfg.scenarios, "grown") {
		if err := b.prepareGrown(ctx); err != nil {
			return fmt.Errorf("grown's preload: %w", err)
		}
	}
	for b.round = 1; b.round <= b.cfg.rounds; b.round++ {
		if b.cfg.rounds > 1 {
			b.logf("round %d of %d", b.round, b.cfg.rounds)
		}
		for _, c := range b.cfg.concurrency {
			// replay and peer_replay send the first executions just made
			// at this concurrency again: a retry storm of the requests just
			// made, the same in every round.
			b.firsts, b.peerFirsts = nil, nil
			for _, name := range b.cfg.scenarios {
				if err := ctx.Err(); err != nil {
					return err
				}
				r, err := b.scenario(ctx, name, c)
				if err != nil {
					return fmt.Errorf("%s at %d clients in round %d: %w", name, c, b.round, err)
				}
				r.name, r.concurrency, r.round = name, c, b.round
				b.results = append(b.results, r)
				b.logf("%s", r.line())
			}
		}
	}
	return nil
}

func (b *bench) scenario(ctx context.Context, name string, c int) (result, error) {
	switch name {
	case "ceiling":
		return b.runSQL(ctx, name, c, true, b.ceilingBatch)
	case "ceiling_tx":
		return b.runSQL(ctx, name, c, true, b.ceilingTx)
	case "select":
		return b.runSelect(ctx, c)
	case "floor":
		return b.runFloor(ctx, c)
	case "bare_sql":
		return b.runSQL(ctx, name, c, false, b.bareSQL)
	case "bare":
		return b.runBare(ctx, c)
	case "first":
		return b.runFirst(ctx, c)
	case "statement":
		return b.runStatement(ctx, c)
	case "replay":
		return b.runReplay(ctx, c)
	case "peer":
		return b.runPeer(ctx, c)
	case "peer_replay":
		return b.runPeerReplay(ctx, c)
	case "storm":
		return b.runStorm(ctx, c)
	case "dasha":
		return b.runDasha(ctx, c)
	case "prune":
		return b.runPrune(ctx, c)
	case "grown":
		return b.runGrown(ctx, c)
	case "overload":
		return b.runOverload(ctx, c)
	}
	return result{}, fmt.Errorf("unknown scenario %q", name)
}

// profilePath is where a run's CPU profile goes, or "" without --cpuprofile.
func (b *bench) profilePath(name string, c int) string {
	if b.cfg.cpuprofile == "" {
		return ""
	}
	if b.cfg.rounds > 1 {
		return filepath.Join(b.cfg.cpuprofile, fmt.Sprintf("%s-c%d-r%d.pprof", name, c, b.round))
	}
	return filepath.Join(b.cfg.cpuprofile, fmt.Sprintf("%s-c%d.pprof", name, c))
}

// load runs one measured run of scenario name at concurrency c with the
// given number of workers (a storm worker is a group of clients), and
// b.alongside beside it if set.
func (b *bench) load(ctx context.Context, name string, c, workers int, op func(w *worker) bool) (stats, error) {
	along := b.alongside
	b.alongside = nil
	if err := b.settle(ctx); err != nil {
		return stats{}, err
	}
	// oncecall's heap counters are read before the warm-up starts (while it
	// is idle, so the reading is not late) and when the run ends; the WAL
	// position when the warm-up ends and when the run does. What runs
	// alongside starts when the warm-up ends, right after that reading.
	heapFrom, heapErr := heapCounts(ctx, b.client, b.base)
	var from int64
	var fromErr error
	read, alongDone := make(chan struct{}), make(chan struct{})
	alongCtx, windowEnded := context.WithCancel(ctx)
	defer windowEnded()
	timer := time.AfterFunc(b.warmup, func() {
		from, fromErr = b.walPosition(ctx)
		close(read)
		if along != nil {
			along(alongCtx)
		}
		close(alongDone)
	})
	// Whatever else happens, what runs alongside has returned when load
	// does (unless the run ended before its warm-up did: then it never ran).
	defer func() {
		if !timer.Stop() {
			<-alongDone
		}
	}()
	st, err := load(ctx, workers, b.warmup, b.cfg.duration, b.profilePath(name, c), b.parts, op)
	windowEnded()
	if err != nil {
		return st, err
	}
	<-read
	to, toErr := b.walPosition(ctx)
	if fromErr == nil && toErr == nil && st.requests > 0 {
		st.walBytes, st.walOK = float64(to-from)/float64(st.requests), true
	}
	if heapTo, err := heapCounts(ctx, b.client, b.base); heapErr == nil && err == nil {
		st.allocs, st.allocBytes, st.allocOK = heapTo.perRequest(heapFrom)
	} else if !b.noHeapCounts {
		b.logf("oncecall's allocations per request are not reported: %v", cmp.Or(heapErr, err))
		b.noHeapCounts = true
	}
	return st, nil
}

// settle vacuums the database and makes PostgreSQL write a checkpoint
// before a run, so that every run starts from the same state: no run pays
// for the vacuum the rows of the runs before it call for (autovacuum would
// do it during whichever run came next), and one run's WAL cannot trigger
// a checkpoint in the next (whose writes would then pay for the full-page
// images that follow one). Without the right (CHECKPOINT needs a superuser
// or pg_checkpoint) it says so once and runs on.
func (b *bench) settle(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("vacuum before a run: %w", err)
	}
	if b.noCheckpoint {
		return nil
	}
	if _, err := b.pool.Exec(ctx, "CHECKPOINT"); err != nil {
		b.logf("CHECKPOINT before each run failed, runs start wherever the checkpoint cycle is: %v", err)
		b.noCheckpoint = true
	}
	return nil
}

// walPosition is PostgreSQL's current WAL position in bytes.
func (b *bench) walPosition(ctx context.Context) (int64, error) {
	var pos int64
	err := b.pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").Scan(&pos)
	return pos, err
}

// postmaster is the pid of the PostgreSQL server the bench's pool reaches,
// when it runs on this machine: the parent of a backend of the pool, both
// named postgres.
func (b *bench) postmaster(ctx context.Context) (int, bool) {
	var backend int
	if err := b.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, false
	}
	st, ok := procStat(backend)
	if !ok || st.comm != "postgres" {
		return 0, false
	}
	parent, ok := procStat(st.ppid)
	if !ok || parent.comm != "postgres" {
		return 0, false
	}
	return st.ppid, true
}

// isLoopback reports whether a --url names this machine.
func isLoopback(rawURL string) (port string, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if host == "localhost" {
		return port, true
	}
	ip := net.ParseIP(host)
	return port, ip != nil && ip.IsLoopback()
}
