package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/staff"
)

const operatorUsage = `usage:
  oncecall operator add --name NAME --email EMAIL --role viewer|resolver|admin [--tenant ID_OR_NAME]
                        [--password-env VAR] [--base-url URL] [--json]
  oncecall operator link --email EMAIL [--base-url URL]
  oncecall operator list
  oncecall operator end-sessions --email EMAIL
  oncecall operator disable --email EMAIL
The console's staff (docs/console.md). Without --password-env, add prints a one-time sign-in link
(valid 72 hours) where the person chooses their password.`

// operatorCmd manages the console's named staff.
func operatorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if helpAsked(args, operatorUsage, stdout) {
		return nil
	}
	if len(args) == 0 {
		return errors.New(operatorUsage)
	}
	switch args[0] {
	case "add":
		return operatorAdd(ctx, args[1:], stdout, stderr)
	case "link":
		return operatorLink(ctx, args[1:], stdout, stderr)
	case "list":
		return operatorList(ctx, args[1:], stdout, stderr)
	case "end-sessions", "disable":
		return operatorEnd(ctx, args[0], args[1:], stdout, stderr)
	}
	return errors.New(operatorUsage)
}

func operatorFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := newFlags("operator "+name, stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), operatorUsage)
		fs.PrintDefaults()
	}
	return fs
}

// commandActor is who acts from the command line: the account running it.
func commandActor() oncecall.Actor {
	return oncecall.Actor{Name: env("USER", "command line"), Via: oncecall.ViaCommand}
}

func operatorAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := operatorFlags("add", stderr)
	name := fs.String("name", "", "the person's name, as the audit trail shows it (required)")
	email := fs.String("email", "", "their e-mail address: what they sign in with, also through the identity provider (required)")
	role := fs.String("role", "", "viewer (reads), resolver (also resolves, retries, notes, bulk, follow-ups) or admin (also the staff) (required)")
	tenantRef := fs.String("tenant", "", "limit them to this tenant (its id or name); default every tenant")
	passwordEnv := fs.String("password-env", "", "set the initial password from this environment variable instead of printing a sign-in link")
	baseURL := fs.String("base-url", os.Getenv("ONCECALL_PUBLIC_URL"), "oncecall's public URL, for the sign-in link (env ONCECALL_PUBLIC_URL)")
	asJSON := fs.Bool("json", false, `print {"id": ..., "email": ..., "sign_in_link": ...}`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), operatorUsage)
	}
	r := oncecall.Role(*role)
	if !r.Allows(oncecall.RoleViewer) {
		return fmt.Errorf("--role must be viewer, resolver or admin\n%s", operatorUsage)
	}
	var password string
	if *passwordEnv != "" {
		if password = os.Getenv(*passwordEnv); password == "" {
			return fmt.Errorf("%s is empty: put the initial password in it", *passwordEnv)
		}
		if err := staff.CheckPassword(password, *name, *email); err != nil {
			return errors.New(fault.As(err).Message)
		}
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	p := staff.Person{Name: *name, Email: *email, Role: r, Password: password}
	tenantName := "every tenant"
	if ref := strings.TrimSpace(*tenantRef); ref != "" {
		t, err := findTenant(ctx, store, ref)
		if err != nil {
			return err
		}
		p.TenantID, tenantName = t.ID, t.Name
	}
	o, secret, err := newStaff(store).Add(ctx, commandActor(), p)
	if err != nil {
		return errors.New(fault.As(err).Message)
	}
	link := signInLink(*baseURL, secret)
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"id": o.ID.String(), "email": o.Email, "role": string(o.Role), "sign_in_link": link})
	}
	fmt.Fprintf(stdout, "added %s <%s>, %s of %s\n", o.Name, o.Email, o.Role, tenantName)
	if secret != "" {
		fmt.Fprintf(stdout, "one-time sign-in link (valid 72 hours; give it to them alone):\n  %s\n", link)
	} else {
		fmt.Fprintln(stdout, "they sign in with their e-mail address and the password set")
	}
	return nil
}

// signInLink is the one-time link's URL: under base when it is known,
// else the path to put after oncecall's address.
func signInLink(base, secret string) string {
	if secret == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/console/welcome?t=" + url.QueryEscape(secret)
}

func newStaff(store *db.Store) *staff.Staff { return staff.New(staff.Config{Store: store}) }

func operatorLink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := operatorFlags("link", stderr)
	email := fs.String("email", "", "the person's e-mail address (required)")
	baseURL := fs.String("base-url", os.Getenv("ONCECALL_PUBLIC_URL"), "oncecall's public URL, for the sign-in link (env ONCECALL_PUBLIC_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *email == "" || fs.NArg() > 0 {
		return errors.New(operatorUsage)
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	o, secret, err := newStaff(store).NewLink(ctx, commandActor(), *email)
	if err != nil {
		return errors.New(fault.As(err).Message)
	}
	fmt.Fprintf(stdout, "one-time sign-in link for %s (valid 72 hours; their password, if any, stays until they use it):\n  %s\n",
		o.Name, signInLink(*baseURL, secret))
	return nil
}

func operatorList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := operatorFlags("list", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return errors.New(operatorUsage)
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	people, err := store.Operators(ctx)
	if err != nil {
		return err
	}
	open, err := store.OpenSessionCounts(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tEMAIL\tROLE\tTENANT\tSESSIONS\tSTATUS")
	for _, o := range people {
		tenant := "every tenant"
		if o.TenantID != uuid.Nil {
			if t, err := store.TenantByID(ctx, o.TenantID); err == nil {
				tenant = t.Name
			}
		}
		status := "enabled"
		if !o.DisabledAt.IsZero() {
			status = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", o.Name, o.Email, o.Role, tenant, open[o.ID], status)
	}
	return tw.Flush()
}

// operatorEnd ends a person's sessions, or disables them (which ends them too).
func operatorEnd(ctx context.Context, what string, args []string, stdout, stderr io.Writer) error {
	fs := operatorFlags(what, stderr)
	email := fs.String("email", "", "the person's e-mail address (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *email == "" || fs.NArg() > 0 {
		return errors.New(operatorUsage)
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	o, err := store.OperatorByEmail(ctx, strings.ToLower(strings.TrimSpace(*email)))
	if errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("no one of the staff has the e-mail address %s", *email)
	}
	if err != nil {
		return err
	}
	st := newStaff(store)
	if what == "disable" {
		if err := st.Disable(ctx, commandActor(), o.ID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "disabled %s: their sessions are ended and they cannot sign in\n", o.Name)
		return nil
	}
	n, err := st.EndSessions(ctx, commandActor(), o.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ended %d session(s) of %s\n", n, o.Name)
	return nil
}
