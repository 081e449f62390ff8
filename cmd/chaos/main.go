// Command chaos runs oncecall under failure and audits its promise: three
// replicas on one embedded PostgreSQL, the provider simulator with faults, a
// fleet of Dasha and REST callers, a replica SIGKILLed every few seconds and
// PostgreSQL restarted once. Its last line is the audit; it exits 1 unless
// nothing was duplicated, lost or falsely confirmed.
//
// With --failover it runs oncecall on a Patroni cluster instead (etcd and
// three PostgreSQL nodes in synchronous strict mode, two replicas on a
// multi-host URL) and kills, switches over and cuts off the leader; see
// docs/high-availability.md.
//
// With --calls N it plays N whole phone calls instead, on Dasha, Vapi,
// Retell and ElevenLabs, each a script of a caller's intents played by a
// simulated model, under the same kills and faults, and audits every
// answer's claim against the settled state; see docs/chaos.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/testkit/chaos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "chaos:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg chaos.Config
	fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long callers, faults and kills run")
	fs.IntVar(&cfg.Clients, "clients", 16, "concurrent callers")
	fs.IntVar(&cfg.Replicas, "replicas", 3, "oncecall processes on the one database")
	fs.DurationVar(&cfg.KillEvery, "kill-every", 4*time.Second, "mean time between SIGKILLs of a random replica")
	fs.DurationVar(&cfg.PGOutage, "pg-outage", 2*time.Second, "how long PostgreSQL stays down when it is restarted (at 40% of the run)")
	fs.DurationVar(&cfg.Settle, "settle", 60*time.Second, "bound on the wait for the reconcilers after the run")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the callers' and the chaos's choices (0: from the clock)")
	fs.StringVar(&cfg.Binary, "oncecall", "", "a built oncecall binary (default: build cmd/oncecall)")
	fs.StringVar(&cfg.Dir, "dir", "", "folder for the database, ledger and logs (default: a temporary one, kept only if the run fails)")
	failover := fs.Bool("failover", false, "run on a Patroni cluster and fail its leader over (needs patroni and etcd)")
	basePort := fs.Int("base-port", 23000, "with --failover: first of the 50 loopback ports the run uses")
	minFailovers := fs.Int("min-failovers", 2, "with --failover: fail a run with fewer failovers (lengthen --duration)")
	fs.BoolVar(&cfg.Stripe, "stripe", false, "serve payments with the Stripe adapter against the simulator's Stripe mode")
	fs.BoolVar(&cfg.Twilio, "twilio", false, "serve SMS with the Twilio adapter against the simulator's Twilio mode (with --stripe: both)")
	fs.BoolVar(&cfg.Calendars, "calendars", false, "add tenants whose appointments live in Google Calendar, Microsoft 365 and Cal.com (fakes run as processes, with faults)")
	calls := fs.Int("calls", 0, "play this many whole calls on the four voice platforms and audit what was said (make chaos-calls)")
	concurrency := fs.Int("concurrency", 24, "with --calls: calls at once")
	tenants := fs.Int("tenants", 6, "with --calls: businesses the calls are spread over")
	only := fs.String("only", "", "with --calls: play only these calls of the seed's scripts (comma-separated numbers), to replay a history")
	histories := fs.Int("histories", 5, "with --calls: print the whole history of at most this many calls with a violation (all are in DIR/histories.txt)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *calls > 0 {
		switch {
		case fs.NArg() > 0:
			return fmt.Errorf("unexpected argument %q", fs.Arg(0))
		case *failover || cfg.Stripe || cfg.Twilio:
			return errors.New("--calls runs payments and messaging on the simulator's own protocol: --failover, --stripe and --twilio are for the request-level runs")
		}
		cc := chaos.CallsConfig{
			Calls: *calls, Concurrency: *concurrency, Tenants: *tenants, Replicas: cfg.Replicas, KillEvery: cfg.KillEvery,
			PGOutage: cfg.PGOutage, Settle: cfg.Settle, Seed: cfg.Seed, Binary: cfg.Binary, Dir: cfg.Dir, Out: stdout,
		}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "duration" {
				cc.Duration = cfg.Duration // otherwise every call is played
			}
		})
		var err error
		if cc.Only, err = chaos.ParseOnly(*only); err != nil {
			return err
		}
		return runCalls(ctx, cc, *histories, stdout)
	}
	if *failover {
		clients := 12
		replicas := 2
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "clients":
				clients = cfg.Clients
			case "replicas":
				replicas = cfg.Replicas
			}
		})
		return runFailover(ctx, chaos.FailoverConfig{
			Duration: cfg.Duration, Clients: clients, Replicas: replicas, BasePort: *basePort,
			Seed: cfg.Seed, Binary: cfg.Binary, Dir: cfg.Dir, Out: stdout,
		}, *minFailovers, stdout)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Duration <= 0 || cfg.KillEvery <= 0 || cfg.Clients <= 0 || cfg.Replicas <= 0 {
		return errors.New("--duration, --kill-every, --clients and --replicas must be positive")
	}
	cfg.Out = stdout
	rep, err := chaos.Run(ctx, cfg)
	if err != nil {
		return err
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, "chaos: problem:", p)
	}
	fmt.Fprintln(stdout, rep.Details())
	fmt.Fprintln(stdout, rep.String())
	if !rep.OK() {
		return errBroken
	}
	return nil
}

// runFailover runs a failover run and prints its audit; the last line is
// the one summary line.
func runFailover(ctx context.Context, cfg chaos.FailoverConfig, minFailovers int, stdout io.Writer) error {
	rep, err := chaos.RunFailover(ctx, cfg)
	if err != nil {
		return err
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, "failover: problem:", p)
	}
	fmt.Fprintln(stdout, rep.Details())
	fmt.Fprintln(stdout, rep.String())
	if !rep.OK() {
		return errBroken
	}
	if rep.Failovers < minFailovers {
		return fmt.Errorf("only %d failovers, fewer than %d: lengthen --duration", rep.Failovers, minFailovers)
	}
	return nil
}

// runCalls runs the calls and prints their audit: the problems, the
// histories of the calls with a violation, then the figures; the last line
// is the one summary line.
func runCalls(ctx context.Context, cfg chaos.CallsConfig, histories int, stdout io.Writer) error {
	if cfg.Calls <= 0 || cfg.Concurrency <= 0 || cfg.Tenants <= 0 {
		return errors.New("--calls, --concurrency and --tenants must be positive")
	}
	start := time.Now()
	rep, err := chaos.RunCalls(ctx, cfg)
	if err != nil {
		return err
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, "calls: problem:", p)
	}
	for i, h := range rep.Histories {
		if i == histories {
			fmt.Fprintf(stdout, "calls: %d more histories in the run's histories.txt\n", len(rep.Histories)-histories)
			break
		}
		fmt.Fprint(stdout, h, "\n")
	}
	fmt.Fprintf(stdout, "calls: took %v\n", time.Since(start).Round(time.Second))
	fmt.Fprintln(stdout, rep.Details())
	fmt.Fprintln(stdout, rep.String())
	if !rep.OK() {
		return errSpoken
	}
	return nil
}

// errSpoken: a caller heard something false, or an intent was doubled,
// lost, left pending, or a call was locked out; the last line says which.
var errSpoken = errors.New("the audit of speech found violations")

// errBroken: the audit found a broken promise; the last line says which.
var errBroken = errors.New("the audit found duplicated, lost or falsely confirmed actions")
