// Command calendarsim runs a stateful fake of one calendar provider's API
// (Google Calendar, Microsoft Graph, Cal.com API v2) that fails on
// purpose. Tests and chaos runs point oncecall's calendar adapters at it
// and audit its ledger (GET /sim/ledger). See docs/calendarsim.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/internal/sim/calcom"
	"github.com/oncecall/oncecall/internal/sim/googlecal"
	"github.com/oncecall/oncecall/internal/sim/msgraph"
	"github.com/oncecall/oncecall/internal/sim/simkit"
)

const usage = `calendarsim: a fake calendar provider that fails on purpose.

Usage:
  calendarsim --provider google|microsoft|calcom [--addr HOST:PORT] [--lookup-lag D]
              [--api-key KEY]

Faults are set per request (header X-Sim-Fault) or with POST /sim/faults;
GET /sim/ledger lists every event or booking. See docs/calendarsim.md.

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "calendarsim:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("calendarsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	prov := fs.String("provider", "", "google, microsoft or calcom")
	addr := fs.String("addr", "127.0.0.1:8091", "listen address (port 0 picks one; the log's first line tells)")
	lag := fs.Duration("lookup-lag", 0, "hide every write from reads for this long after it")
	apiKey := fs.String("api-key", calcom.DefaultAPIKey, "calcom: the API key required as Authorization: Bearer KEY")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	level, err := zerolog.ParseLevel(strings.ToLower(cmpOr(os.Getenv("LOG_LEVEL"), "info")))
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	log := zerolog.New(stderr).Level(level).With().Timestamp().Str("service", "calendarsim").Str("provider", *prov).Logger()
	kit := &simkit.Kit{LookupLag: *lag, Log: log, Done: ctx.Done()}
	var h http.Handler
	switch *prov {
	case "google":
		h = googlecal.New(kit).Handler()
	case "microsoft":
		h = msgraph.New(kit).Handler()
	case "calcom":
		h = calcom.New(kit, *apiKey).Handler()
	default:
		fs.Usage()
		return fmt.Errorf("--provider must be google, microsoft or calcom")
	}
	return simkit.Serve(ctx, *addr, h, log)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
