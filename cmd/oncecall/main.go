// Command oncecall runs the oncecall service and its operator commands.
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
	// The zone database, embedded: tenants' timezones load on a machine or
	// in a container (distroless) without one.
	_ "time/tzdata"

	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
)

const usage = `oncecall: exactly-once side effects for voice-agent tool webhooks.

Usage:
  oncecall serve   [--addr HOST:PORT] [--data-dir DIR] [--dasha-wait 5s]
                                                        run the HTTP service
  oncecall migrate                                      apply database migrations
  oncecall tenant create --name NAME [--dasha-org ORG] [--timezone ZONE] [--locale en-US|en-GB] [--scope SCOPE]
                         [--stripe-account ACCT] [--json]
                                                        create a tenant and print its API key once
  oncecall tenant update --tenant ID_OR_NAME [--timezone ZONE] [--locale en-US|en-GB] [--caller-confirmation on|off]
                                                        change how a tenant's times are read and said, and
                                                        whether its callers confirm a read-back first
  oncecall tenant stripe-account --tenant ID [--account acct_...]
                                                        set or clear the tenant's Stripe Connect account
  oncecall tenant twilio-sender --tenant ID [--from +1... | --messaging-service MG...]
                                                        set or clear the tenant's own SMS sender
  oncecall tenant move --tenant ID --to CLUSTER [--drain 10s] [--max-pause 1m]
                                                        move a tenant to another PostgreSQL cluster (docs/scaling.md)
  oncecall key create --tenant ID_OR_NAME [--scope SCOPE] [--json]
                                                        create another API key for a tenant; SCOPE: full (default),
                                                        voice (every voice platform's webhooks) or one platform's
                                                        (dasha, vapi, retell or elevenlabs)
  oncecall key retell --tenant ID_OR_NAME (--api-key-env VAR | --remove)
                                                        require Retell's signature, made with the tenant's Retell key
  oncecall reconcile [--once]                           resolve unknown and abandoned actions from provider evidence
  oncecall actions list|show|resolve ...                inspect and resolve actions (operators)
  oncecall operator add|link|list|end-sessions|disable ...
                                                        the operator console's named staff (docs/console.md)
  oncecall calendar connect|check|show|disconnect|watch ...
                                                        book a tenant in its Google, Microsoft 365 or Cal.com calendar
  oncecall tools export --base-url URL [--platform dasha|vapi|retell|elevenlabs] [--api-key-placeholder TEXT] [--out DIR]
                                                        print a voice platform's tool definitions
  oncecall prune [--dry-run]                            prune expired response bodies and actions now
  oncecall healthcheck [--url URL]                      exit 0 when the service's /readyz answers 200
  oncecall --version                                    print the version, commit and Go version

Run "oncecall COMMAND -h" for a command's flags; README lists every setting.

Environment:
  DATABASE_URL      PostgreSQL URL; serve starts an embedded PostgreSQL when unset
                    (behind PgBouncer add ?default_query_exec_mode=cache_describe)
  ONCECALL_MIGRATE_DATABASE_URL  where migrations run instead (a direct connection)
  ONCECALL_CLUSTERS  more PostgreSQL clusters, name=URL,...: tenants the directory places there are served from them
  ONCECALL_ADDR     listen address (default :8080)
  ONCECALL_DATA_DIR embedded database folder (default .oncecall)
  ONCECALL_EMBEDDED_PORT  the embedded database's port (default: a free one at every start)
  ONCECALL_DASHA_WAIT how long a Dasha tool call waits for a running attempt (default 5s)
  ONCECALL_DASHA_BUDGET             time a Dasha tool call has until its answer (default 8s)
  ONCECALL_DB_LOCK_TIMEOUT, ONCECALL_DB_STATEMENT_TIMEOUT, ONCECALL_DB_IDLE_IN_TRANSACTION_TIMEOUT
                    PostgreSQL timeouts of every pool connection (2s, 5s, 10s); see docs/database.md
  ONCECALL_TENANT_DB_REQUESTS, ONCECALL_TENANT_DB_WAIT
                    requests of one tenant at once (half the pool) and the wait for a turn (1s)
  LOG_LEVEL         debug, info, warn or error (default info)
  ONCECALL_OPERATOR_TOKEN           enables /v1/ops and break-glass sign-in to the console (at least 32 characters)
  ONCECALL_OIDC_ISSUER, ONCECALL_OIDC_CLIENT_ID, ONCECALL_OIDC_CLIENT_SECRET, ONCECALL_OIDC_NAME
                    console sign-in through the clinic's identity provider (needs ONCECALL_PUBLIC_URL)
  ONCECALL_CONSOLE_TIMEZONE         the console's zone for times of no tenant (default: the machine's)
  ONCECALL_PROVIDER_<CAP>_URL       serve capability CAP (CALENDAR, PAYMENTS, MESSAGING, CRM) by a remote provider
  ONCECALL_PROVIDER_PAYMENTS=stripe payments through Stripe (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET; docs/providers/stripe.md)
  ONCECALL_PROVIDER_MESSAGING=twilio SMS through Twilio (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_FROM; docs/providers/twilio.md)
  ONCECALL_RECONCILE_INTERVAL       time between reconciler passes (default 2s)
  RESPONSE_RETENTION, ACTION_RETENTION   retention of replay bodies (24h) and actions (720h)
  ONCECALL_DASHA_RATE_LIMIT, ONCECALL_DASHA_RATE_BURST  the Dasha webhooks' own budget (200/s, bursts of 400; 503 past it)
  ONCECALL_RATE_LIMIT, ONCECALL_METRICS_TOKEN, ONCECALL_REQUIRE_DATABASE_URL, ...
                    see README "Configuration"
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		// -h or --help: the usage is printed, which is what was asked.
	case err != nil:
		fmt.Fprintln(os.Stderr, "oncecall:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, stdout, stderr)
	case "migrate":
		return migrate(ctx, rest, stdout, stderr)
	case "tenant":
		return tenant(ctx, rest, stdout, stderr)
	case "key":
		return key(ctx, rest, stdout, stderr)
	case "reconcile":
		return reconcileCmd(ctx, rest, stdout, stderr)
	case "actions":
		return actionsCmd(ctx, rest, stdout, stderr)
	case "calendar":
		return calendarCmd(ctx, rest, stdout, stderr)
	case "operator":
		return operatorCmd(ctx, rest, stdout, stderr)
	case "tools":
		return tools(ctx, rest, stdout, stderr)
	case "prune":
		return pruneCmd(ctx, rest, stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// env returns the environment variable or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func logger(w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(strings.ToLower(env("LOG_LEVEL", "info")))
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// helpAsked reports whether a command group's arguments ask for its usage
// (oncecall actions --help): it is then printed to stdout.
func helpAsked(args []string, usage string, stdout io.Writer) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return true
	}
	return false
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("oncecall "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// migrateDatabaseURL is where migrations run when DATABASE_URL goes through
// a transaction-pooling proxy; empty means DATABASE_URL.
func migrateDatabaseURL() string { return os.Getenv("ONCECALL_MIGRATE_DATABASE_URL") }

// needDatabaseURL returns DATABASE_URL or an error saying how to set it.
func needDatabaseURL() (string, error) {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return "", errors.New("DATABASE_URL is not set: point it at your PostgreSQL, e.g. DATABASE_URL=postgres://user@host:5432/oncecall (serve alone can start an embedded database)")
	}
	return url, nil
}

// openStore opens DATABASE_URL (applying migrations) for a command.
func openStore(ctx context.Context) (*db.Store, func(), error) {
	url, err := needDatabaseURL()
	if err != nil {
		return nil, nil, err
	}
	pool, err := app.OpenDB(ctx, url, migrateDatabaseURL(), 2)
	if err != nil {
		return nil, nil, err
	}
	return db.New(pool), pool.Close, nil
}
