package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/reconcile"
)

const actionsUsage = `usage:
  oncecall actions list [--tenant ID_OR_NAME] [--state running|completed|unknown] [--needs-operator] [--limit N]
  oncecall actions show ID
  oncecall actions resolve ID --outcome confirmed|rejected [--provider-ref REF] [--reason CODE] --note TEXT [--by NAME]`

func actionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if helpAsked(args, actionsUsage, stdout) {
		return nil
	}
	if len(args) == 0 {
		return errors.New(actionsUsage)
	}
	// The database is opened once the arguments are read: --help needs none.
	open := func() (*pgxpool.Pool, error) {
		url, err := needDatabaseURL()
		if err != nil {
			return nil, err
		}
		return app.OpenDB(ctx, url, migrateDatabaseURL(), 2)
	}
	switch args[0] {
	case "list":
		return actionsList(ctx, open, args[1:], stdout, stderr)
	case "show":
		return actionsShow(ctx, open, args[1:], stdout, stderr)
	case "resolve":
		return actionsResolve(ctx, open, args[1:], stdout, stderr)
	}
	return errors.New(actionsUsage)
}

// actionFlags is the flag set of an actions subcommand, whose -h prints
// the commands' usage before the flags.
func actionFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := newFlags("actions "+name, stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), actionsUsage)
		fs.PrintDefaults()
	}
	return fs
}

func actionsList(ctx context.Context, open func() (*pgxpool.Pool, error), args []string, stdout, stderr io.Writer) error {
	fs := actionFlags("list", stderr)
	state := fs.String("state", "", "only actions in this state")
	needsOp := fs.Bool("needs-operator", false, "only actions waiting for an operator")
	limit := fs.Int("limit", 100, "at most this many, newest first")
	tenantRef := fs.String("tenant", "", "only this tenant's actions (its id or name); default every tenant's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), actionsUsage)
	}
	pool, err := open()
	if err != nil {
		return err
	}
	defer pool.Close()
	store := dbStore(pool)
	filter := db.ActionFilter{State: *state, NeedsOperator: *needsOp, Limit: *limit}
	names := map[uuid.UUID]string{}
	if *tenantRef != "" {
		t, err := findTenant(ctx, store, *tenantRef)
		if err != nil {
			return err
		}
		filter.TenantID, names[t.ID] = t.ID, t.Name
	}
	actions, err := store.ListActions(ctx, filter)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tTENANT\tOPERATION\tSTATE\tOUTCOME\tNEEDS_OPERATOR\tCREATED")
	for _, a := range actions {
		name, ok := names[a.TenantID]
		if !ok {
			t, err := store.TenantByID(ctx, a.TenantID)
			if err != nil {
				return fmt.Errorf("tenant of action %s: %w", a.ID, err)
			}
			name, names[a.TenantID] = t.Name, t.Name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%s\n", a.ID, name, a.Operation, a.State, orDash(string(a.Outcome)), a.NeedsOperator, a.CreatedAt.UTC().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}

func actionsShow(ctx context.Context, open func() (*pgxpool.Pool, error), args []string, stdout, stderr io.Writer) error {
	fs := actionFlags("show", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New(actionsUsage)
	}
	id, err := uuid.Parse(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("%q is not an action id", fs.Arg(0))
	}
	pool, err := open()
	if err != nil {
		return err
	}
	defer pool.Close()
	d, err := reconcile.Show(ctx, dbStore(pool), id)
	if err != nil {
		return err
	}
	a := d.Action
	fmt.Fprintf(stdout, "action     %s\noperation  %s\ntenant     %s\nstate      %s\noutcome    %s\nreason     %s\nneeds op.  %v\ncreated    %s\n\nsteps:\n",
		a.ID, a.Operation, a.TenantID, a.State, orDash(string(a.Outcome)), orDash(a.Reason), a.NeedsOperator, a.CreatedAt.UTC().Format("2006-01-02 15:04:05.000"))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STEP\tCAPABILITY\tSTATE\tPROVIDER_REF\tATTEMPTS\tCHECKS\tPROVIDER_KEY\tLAST_ERROR")
	for _, s := range d.Steps {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.Name, s.Capability, s.State, orDash(s.ProviderRef), s.Attempts, s.Checks, s.ProviderKey, orDash(s.LastError))
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\ntimeline:")
	for _, e := range d.Events {
		fmt.Fprintf(stdout, "  %s  %-22s %-10s %s\n", e.At.Format("15:04:05.000"), e.Kind, orDash(e.Step), e.Detail)
	}
	return nil
}

func actionsResolve(ctx context.Context, open func() (*pgxpool.Pool, error), args []string, stdout, stderr io.Writer) error {
	fs := actionFlags("resolve", stderr)
	outcome := fs.String("outcome", "", "confirmed or rejected")
	ref := fs.String("provider-ref", "", "the provider's reference of the write (required to confirm)")
	reason := fs.String("reason", "", "rejection code (default OPERATOR_REJECTED)")
	note := fs.String("note", "", "the evidence (required)")
	by := fs.String("by", env("USER", "operator"), "who resolves it")
	// The id comes first (resolve ID --outcome ...), or after the flags.
	idArg, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, rest = args[0], args[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	switch {
	case idArg == "" && fs.NArg() == 1:
		idArg = fs.Arg(0)
	case idArg == "" || fs.NArg() > 0:
		return errors.New(actionsUsage)
	}
	id, err := uuid.Parse(idArg)
	if err != nil {
		return fmt.Errorf("%q is not an action id", idArg)
	}
	pool, err := open()
	if err != nil {
		return err
	}
	defer pool.Close()
	a, err := reconcile.Resolve(ctx, dbStore(pool), app.Operations(), id, reconcile.Resolution{
		Outcome: oncecall.Outcome(*outcome), ProviderRef: *ref, Reason: *reason, Note: *note,
		Actor: oncecall.Actor{Name: *by, Via: oncecall.ViaCommand},
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]string{"action_id": a.ID.String(), "state": string(a.State), "outcome": string(a.Outcome)})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dbStore(pool *pgxpool.Pool) *db.Store { return db.New(pool) }
