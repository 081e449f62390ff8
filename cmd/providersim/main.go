// Command providersim runs a remote provider that fails on purpose: the
// calendar, payments, messaging and crm capabilities of oncecall's provider
// protocol (docs/provider-protocol.md), with a durable ledger and injectable
// faults. Tests and staging point oncecall's http adapter at it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/internal/sim/providersim"
)

const usage = `providersim: a provider simulator speaking oncecall's provider protocol.

Usage:
  providersim [--addr HOST:PORT] [--ledger FILE] [--no-idempotency]
              [--key-retention D] [--lookup-lag D] [--auth-token TOKEN]

Faults are set per request (header X-Sim-Fault) or with POST /control/faults;
see docs/provider-protocol.md.

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "providersim:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("providersim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	addr := fs.String("addr", env("PROVIDERSIM_ADDR", "127.0.0.1:8090"), "listen address (env PROVIDERSIM_ADDR)")
	ledger := fs.String("ledger", env("PROVIDERSIM_LEDGER", "providersim-ledger.jsonl"),
		"ledger file (JSON lines, fsynced, replayed at start); empty keeps it in memory (env PROVIDERSIM_LEDGER)")
	noIdem := fs.Bool("no-idempotency", false, "ignore Idempotency-Key: every write creates a new record")
	retention := fs.Duration("key-retention", 0, "how long keys are honoured (default 24h)")
	lag := fs.Duration("lookup-lag", 0, "hide writes from lookups for this long after commit")
	token := fs.String("auth-token", os.Getenv("PROVIDERSIM_AUTH_TOKEN"),
		"require Authorization: Bearer TOKEN on every request but /healthz (env PROVIDERSIM_AUTH_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	level, err := zerolog.ParseLevel(strings.ToLower(env("LOG_LEVEL", "info")))
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	log := zerolog.New(stderr).Level(level).With().Timestamp().Str("service", "providersim").Logger()

	m, err := providersim.Start(ctx, providersim.Config{
		Addr: *addr, Ledger: *ledger, NoIdempotency: *noIdem, KeyRetention: *retention,
		LookupLag: *lag, AuthToken: *token, Log: log,
	})
	if err != nil {
		return err
	}
	defer m.Close()
	return m.Serve(ctx)
}

// env returns the environment variable or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}
