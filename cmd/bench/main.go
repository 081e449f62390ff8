// Command bench measures oncecall under load and checks that load never
// produces a duplicate effect. It starts what it needs (an embedded
// PostgreSQL unless --database-url is given, `oncecall serve` as a child
// process unless --url is given or --server inprocess asks for it inside the
// bench, and a baseline HTTP handler without idempotency beside a peer that
// does idempotency by hand), runs --rounds rounds, each running every
// scenario for --duration at each --concurrency in the same order, prints
// one table of the rounds' medians, the ratios that matter (each computed
// per round, then the median) at every concurrency side by side with their
// bounds and shares of them, the server's peak RSS and the machine's load,
// and optionally writes them as JSON. Interleaved rounds keep a machine
// whose speed drifts from favouring whichever scenario ran first.
//
// Scenarios, in the order they run in each round:
//
//	floor       the bare request answered from memory: HTTP on the same stack, no database
//	ceiling     the one statement of a first booking (claim, booking, completion), no HTTP
//	first       REST bookings with fresh Idempotency-Keys
//	statement   ceiling's statement under the key on bare's stack, over HTTP
//	bare_sql    bare's statement (the booking's INSERT), no HTTP
//	bare        an HTTP handler on the same stack doing only the booking write
//	prune       first while a prune deletes --prune-backlog actions past the
//	            action retention and clears as many bodies past the response
//	            retention (prune.go)
//	select      the read of an action by key that a replay needs, no HTTP
//	replay      the requests of first again
//	peer        bookings with fresh keys through idempotency written by hand, on bare's stack
//	peer_replay the requests of peer again
//	ceiling_tx  claim, booking, completion one at a time in one transaction, no HTTP
//	storm       every key sent by 8 clients at once
//	dasha       Dasha tool webhooks with fresh call ids
//	grown       first again after --preload actions are in the table
//	overload    first's request arriving at twice the rate served (overload.go)
//
// After each run it counts the effects in the database (appointments against
// first executions, actions per key, appointments per action and per slot)
// and exits non-zero if any run produced a duplicate or a lost effect.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scenarioOrder is the order in which a round runs the scenarios at each
// concurrency: the scenarios a ratio compares, and those its bound is made
// of, next to each other (floor, ceiling and first; statement right after
// first; bare_sql and bare after them; select before replay; peer before
// peer_replay), because the machine's speed drifts between runs made
// minutes apart. prune comes right after the runs first's bound is made of,
// a few seconds after first, whose p99 its own is held against within the
// round. grown comes last but for overload, which leaves the most behind
// it.
var scenarioOrder = []string{"floor", "ceiling", "first", "statement", "bare_sql", "bare", "prune", "select", "replay", "peer", "peer_replay", "ceiling_tx", "storm", "dasha", "grown", "overload"}

// config is the command line.
type config struct {
	duration    time.Duration
	rounds      int
	concurrency []int
	preload     int
	databaseURL string
	url         string
	jsonPath    string
	scenarios   []string
	cpuprofile  string
	// server is how oncecall runs when url is empty: serverProcess or
	// serverInProcess.
	server string
	// answerBytes is the server's --answer-cache-bytes; negative leaves
	// its default.
	answerBytes int
	// oncecallBin, when set, is the oncecall binary serverProcess runs
	// instead of building one.
	oncecallBin string
	// otlpEndpoint, when set, is where the server process exports its
	// traces, every request sampled; empty: tracing off.
	otlpEndpoint string
	// pruneBacklog is how many actions past the action retention, and how
	// many bodies past the response retention, prune's prune finds.
	pruneBacklog int
}

// How the bench runs oncecall.
const (
	serverProcess   = "process"
	serverInProcess = "inprocess"
)

func main() {
	if dbURL := os.Getenv(bareEnv); dbURL != "" {
		if err := serveBare(dbURL); err != nil {
			fmt.Fprintln(os.Stderr, "bench baseline server:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	b, err := start(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	if err := b.runAll(ctx); err != nil {
		return err
	}
	if err := b.report(); err != nil {
		return err
	}
	if len(b.violations) > 0 {
		return fmt.Errorf("FAIL: %d run(s) produced duplicate or lost effects:\n  %s",
			len(b.violations), strings.Join(b.violations, "\n  "))
	}
	return nil
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.DurationVar(&cfg.duration, "duration", 2*time.Second, "how long each scenario runs at each concurrency in each round (after a short warm-up)")
	fs.IntVar(&cfg.rounds, "rounds", 5, "how many rounds run, each running every scenario once at each concurrency; the report gives medians")
	conc := fs.String("concurrency", "8,32", "comma-separated numbers of concurrent clients")
	fs.IntVar(&cfg.preload, "preload", 1_000_000, "actions inserted before the grown scenario")
	fs.IntVar(&cfg.pruneBacklog, "prune-backlog", defaultPruneBacklog, "actions past the action retention, and as many bodies past the response retention, inserted before each prune run for its prune to take; the default is what one 10-minute --prune-interval of serve finds at 10 million actions a day")
	fs.StringVar(&cfg.databaseURL, "database-url", "", "PostgreSQL to use (default: a private embedded one in a temporary folder, removed after)")
	fs.StringVar(&cfg.url, "url", "", "base URL of a running oncecall (default: one in this process); needs --database-url naming its database")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the results as JSON to this file")
	scen := fs.String("scenarios", strings.Join(scenarioOrder, ","), "comma-separated subset of: "+strings.Join(scenarioOrder, ", "))
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of each measured run to DIR/<scenario>-c<N>.pprof, or <scenario>-c<N>-r<round>.pprof with more than one round (of the bench process: add --server inprocess to profile oncecall too)")
	fs.StringVar(&cfg.server, "server", serverProcess, "how to run oncecall without --url: process (build and start `oncecall serve`, whose peak RSS is reported) or inprocess (inside the bench, for --cpuprofile)")
	fs.StringVar(&cfg.oncecallBin, "oncecall-bin", "", "with --server process: run this oncecall binary instead of building one as make build does (e.g. bin/oncecall after make build)")
	fs.IntVar(&cfg.answerBytes, "answer-cache-bytes", -1, "the server's --answer-cache-bytes (0 keeps no answers in memory, so every replay reads the database); default: the server's")
	fs.StringVar(&cfg.otlpEndpoint, "otlp-endpoint", "", "with --server process: the server exports its traces to this OTLP/HTTP endpoint (a collector such as Jaeger's, http://127.0.0.1:4318), every request sampled; default: tracing off (docs/performance.md#tracing)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if cfg.otlpEndpoint != "" && (cfg.server != serverProcess || cfg.url != "") {
		return config{}, errors.New("--otlp-endpoint needs --server process (the default) and no --url: it configures the server the bench starts")
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if cfg.duration <= 0 {
		return config{}, errors.New("--duration must be positive")
	}
	if cfg.rounds < 1 {
		return config{}, errors.New("--rounds must be at least 1")
	}
	if cfg.preload < 0 {
		return config{}, errors.New("--preload must not be negative")
	}
	if cfg.pruneBacklog < 1 {
		return config{}, errors.New("--prune-backlog must be positive")
	}
	if cfg.server != serverProcess && cfg.server != serverInProcess {
		return config{}, fmt.Errorf("--server: %q is neither %s nor %s", cfg.server, serverProcess, serverInProcess)
	}
	if cfg.url != "" && cfg.databaseURL == "" {
		return config{}, errors.New("--url needs --database-url naming that server's database (to create tenants and slots and to count effects)")
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return config{}, fmt.Errorf("--concurrency: %q is not a positive number", s)
		}
		cfg.concurrency = append(cfg.concurrency, n)
	}
	slices.Sort(cfg.concurrency)
	cfg.concurrency = slices.Compact(cfg.concurrency)
	want := map[string]bool{}
	for _, s := range strings.Split(*scen, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(scenarioOrder, s) {
			return config{}, fmt.Errorf("--scenarios: unknown scenario %q (known: %s)", s, strings.Join(scenarioOrder, ", "))
		}
		want[s] = true
	}
	for _, s := range scenarioOrder {
		if want[s] {
			cfg.scenarios = append(cfg.scenarios, s)
		}
	}
	return cfg, nil
}
