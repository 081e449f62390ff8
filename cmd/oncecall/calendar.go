package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/provider/calendars"
)

const calendarUsage = `usage: oncecall calendar connect --tenant ID_OR_NAME --provider google|microsoft|calcom
                         (--credentials-file PATH | --credentials-env NAME)
                         [--calendar CALENDAR_ID] [--map PRACTITIONER[@LOCATION]=CALENDAR_ID ...]
                         [--subject EMAIL] [--directory-id ID --client-id ID] [--base-url URL]
                         [--notification-secret-file PATH | --notification-secret-env NAME]
       oncecall calendar watch --tenant ID_OR_NAME --public-url URL
       oncecall calendar check --tenant ID_OR_NAME [--date YYYY-MM-DD]
       oncecall calendar show --tenant ID_OR_NAME
       oncecall calendar disconnect --tenant ID_OR_NAME`

// calendarCmd connects a tenant to the calendar its business already uses
// and checks what oncecall reads there (docs/providers/google-calendar.md,
// microsoft-365.md, calcom.md).
func calendarCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(calendarUsage)
	}
	switch args[0] {
	case "connect":
		return calendarConnect(ctx, args[1:], stdout, stderr)
	case "check":
		return calendarCheck(ctx, args[1:], stdout, stderr)
	case "watch":
		return calendarWatch(ctx, args[1:], stdout, stderr)
	case "show":
		return calendarShow(ctx, args[1:], stdout, stderr)
	case "disconnect":
		return calendarDisconnect(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, calendarUsage)
		return nil
	}
	return errors.New(calendarUsage)
}

// mapFlags collects the repeated --map flag.
type mapFlags []string

func (m *mapFlags) String() string     { return strings.Join(*m, ",") }
func (m *mapFlags) Set(v string) error { *m = append(*m, v); return nil }

func calendarConnect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("calendar connect", stderr)
	tenantRef := fs.String("tenant", "", "the tenant: its id, or its name (required)")
	prov := fs.String("provider", "", "google, microsoft or calcom (required)")
	credFile := fs.String("credentials-file", "", "the file holding the secret on every server: Google's service account key (JSON), Microsoft's client secret, Cal.com's API key")
	credEnv := fs.String("credentials-env", "", "instead: the environment variable holding the secret on every server")
	single := fs.String("calendar", "", "the calendar of the business's single calendar (slots without a practitioner)")
	var maps mapFlags
	fs.Var(&maps, "map", "PRACTITIONER[@LOCATION]=CALENDAR_ID: the calendar of a practitioner (id or name), at one location (id or name) or at all; repeat for each")
	subject := fs.String("subject", "", "google: the Workspace user the service account acts as (domain-wide delegation)")
	directory := fs.String("directory-id", "", "microsoft: the Entra ID directory (tenant) id (required for microsoft)")
	client := fs.String("client-id", "", "microsoft: the app's client id (required for microsoft)")
	authority := fs.String("authority-url", "", "microsoft: the token issuer, when not https://login.microsoftonline.com")
	base := fs.String("base-url", "", "the provider's API base, when not the provider's own (a self-hosted Cal.com)")
	notifyFile := fs.String("notification-secret-file", "", "the file holding, on every server, the secret that verifies the provider's change notifications (see calendar watch)")
	notifyEnv := fs.String("notification-secret-env", "", "instead: the environment variable holding it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), calendarUsage)
	}
	conn := oncecall.CalendarConnection{Provider: strings.TrimSpace(*prov), BaseURL: strings.TrimSpace(*base), Settings: map[string]string{}}
	if err := connectionFlags(&conn, *credFile, *credEnv, *subject, *directory, *client, *authority); err != nil {
		return err
	}
	if err := notificationFlags(&conn, *notifyFile, *notifyEnv); err != nil {
		return err
	}
	if *single == "" && len(maps) == 0 {
		return errors.New("give the calendars: --calendar CALENDAR_ID for the single calendar and/or --map PRACTITIONER[@LOCATION]=CALENDAR_ID")
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, strings.TrimSpace(*tenantRef))
	if err != nil {
		return err
	}
	conn.TenantID = t.ID
	var mappings []oncecall.CalendarMapping
	if *single != "" {
		mappings = append(mappings, oncecall.CalendarMapping{CalendarID: strings.TrimSpace(*single)})
	}
	for _, m := range maps {
		mapping, err := parseMapping(ctx, store, t.ID, m)
		if err != nil {
			return err
		}
		mappings = append(mappings, mapping)
	}
	for _, m := range mappings {
		if err := calendarID(conn.Provider, m.CalendarID); err != nil {
			return err
		}
	}
	stored, err := store.ConnectCalendar(ctx, conn, mappings)
	if errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("connect: %w", err)
	}
	if err != nil {
		return fmt.Errorf("connect the calendar: %w", err)
	}
	fmt.Fprintf(stdout, "tenant %s (%s): appointments live in %s (connection %s), %d calendar(s) mapped\n",
		t.Name, t.ID, conn.Provider, stored.ID, len(mappings))
	if _, err := (calendars.Secrets{}).Read(conn.Credentials); err != nil {
		fmt.Fprintf(stdout, "note: %v; only servers that read it book in this calendar\n", err)
	}
	fmt.Fprintln(stdout, "run: oncecall calendar check --tenant", t.ID)
	return nil
}

// connectionFlags checks the provider's flags and writes them on conn.
func connectionFlags(conn *oncecall.CalendarConnection, credFile, credEnv, subject, directory, client, authority string) error {
	switch {
	case !slices.Contains(calendars.Kinds, conn.Provider):
		return errors.New("--provider must be google, microsoft or calcom")
	case (credFile == "") == (credEnv == ""):
		return errors.New("give the secret's place once: --credentials-file PATH or --credentials-env NAME (never the secret itself)")
	case credFile != "":
		conn.Credentials = "file:" + credFile
	default:
		if !envName(credEnv) {
			return fmt.Errorf("--credentials-env %q is not an environment variable's name (letters, digits, _)", credEnv)
		}
		conn.Credentials = "env:" + credEnv
	}
	if conn.BaseURL != "" {
		if u, err := url.Parse(conn.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return errors.New("--base-url must be an http(s) URL")
		}
	}
	switch conn.Provider {
	case oncecall.CalendarGoogle:
		if directory != "" || client != "" || authority != "" {
			return errors.New("--directory-id, --client-id and --authority-url are for microsoft")
		}
		if subject != "" {
			conn.Settings[calendars.SettingSubject] = subject
		}
	case oncecall.CalendarMicrosoft:
		if directory == "" || client == "" {
			return errors.New("microsoft needs --directory-id (the Entra ID tenant) and --client-id (the app)")
		}
		if subject != "" {
			return errors.New("--subject is for google")
		}
		conn.Settings[calendars.SettingDirectory], conn.Settings[calendars.SettingClient] = directory, client
		if authority != "" {
			conn.Settings[calendars.SettingAuthority] = authority
		}
	case oncecall.CalendarCalcom:
		if subject != "" || directory != "" || client != "" || authority != "" {
			return errors.New("--subject, --directory-id, --client-id and --authority-url are not Cal.com's")
		}
	}
	return nil
}

// notificationFlags names where the notification secret is kept, when
// given.
func notificationFlags(conn *oncecall.CalendarConnection, file, env string) error {
	switch {
	case file != "" && env != "":
		return errors.New("give the notification secret's place once: --notification-secret-file PATH or --notification-secret-env NAME")
	case file != "":
		conn.Settings[calendars.SettingNotificationSecret] = "file:" + file
	case env != "":
		if !envName(env) {
			return fmt.Errorf("--notification-secret-env %q is not an environment variable's name (letters, digits, _)", env)
		}
		conn.Settings[calendars.SettingNotificationSecret] = "env:" + env
	}
	return nil
}

func envName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// calendarID checks a calendar id's form for its provider.
func calendarID(provider, id string) error {
	switch {
	case id == "" || len(id) > 1024:
		return errors.New("a calendar id is 1 to 1024 characters")
	case provider == oncecall.CalendarCalcom:
		if n, err := strconv.Atoi(id); err != nil || n <= 0 {
			return fmt.Errorf("cal.com calendars are event type ids (numbers): %q is not one", id)
		}
	}
	return nil
}

// parseMapping reads PRACTITIONER[@LOCATION]=CALENDAR_ID, naming the
// practitioner and the location by id or name.
func parseMapping(ctx context.Context, store *db.Store, tenant uuid.UUID, v string) (oncecall.CalendarMapping, error) {
	who, cal, ok := strings.Cut(v, "=")
	who, cal = strings.TrimSpace(who), strings.TrimSpace(cal)
	if !ok || who == "" || cal == "" {
		return oncecall.CalendarMapping{}, fmt.Errorf("--map %q: write PRACTITIONER[@LOCATION]=CALENDAR_ID", v)
	}
	m := oncecall.CalendarMapping{CalendarID: cal}
	practitioner, location, atLocation := strings.Cut(who, "@")
	p, err := findPractitioner(ctx, store, tenant, strings.TrimSpace(practitioner))
	if err != nil {
		return m, fmt.Errorf("--map %q: %w", v, err)
	}
	m.PractitionerID, m.Practitioner = p.ID, p.Name
	if atLocation {
		l, err := findLocation(ctx, store, tenant, strings.TrimSpace(location))
		if err != nil {
			return m, fmt.Errorf("--map %q: %w", v, err)
		}
		m.LocationID, m.Location = l.ID, l.Name
	}
	return m, nil
}

func findPractitioner(ctx context.Context, store *db.Store, tenant uuid.UUID, ref string) (oncecall.Practitioner, error) {
	var p oncecall.Practitioner
	var err error
	if id, perr := uuid.Parse(ref); perr == nil {
		p, err = store.PractitionerByID(ctx, tenant, id)
	} else {
		p, err = store.PractitionerByName(ctx, tenant, ref)
	}
	if errors.Is(err, db.ErrNotFound) {
		return p, fmt.Errorf("the tenant has no practitioner %q", ref)
	}
	return p, err
}

func findLocation(ctx context.Context, store *db.Store, tenant uuid.UUID, ref string) (oncecall.Location, error) {
	var l oncecall.Location
	var err error
	if id, perr := uuid.Parse(ref); perr == nil {
		l, err = store.LocationByID(ctx, tenant, id)
	} else {
		l, err = store.LocationByName(ctx, tenant, ref)
	}
	if errors.Is(err, db.ErrNotFound) {
		return l, fmt.Errorf("the tenant has no location %q", ref)
	}
	return l, err
}

// tenantFlag parses the commands that take only --tenant (and, for check,
// --date).
func tenantFlag(name string, args []string, stderr io.Writer, date *string) (string, error) {
	fs := newFlags("calendar "+name, stderr)
	tenantRef := fs.String("tenant", "", "the tenant: its id, or its name (required)")
	if date != nil {
		fs.StringVar(date, "date", "", "the day to read, YYYY-MM-DD in the tenant's timezone (default: today)")
	}
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 || strings.TrimSpace(*tenantRef) == "" {
		return "", errors.New(calendarUsage)
	}
	return strings.TrimSpace(*tenantRef), nil
}

func calendarShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	ref, err := tenantFlag("show", args, stderr, nil)
	if err != nil {
		return err
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, ref)
	if err != nil {
		return err
	}
	c, err := store.CalendarConnection(ctx, t.ID)
	if errors.Is(err, db.ErrNotFound) {
		fmt.Fprintf(stdout, "tenant %s (%s) has no calendar connection: its appointments are oncecall's own (or the http calendar provider's)\n", t.Name, t.ID)
		return nil
	}
	if err != nil {
		return err
	}
	maps, err := store.CalendarMappings(ctx, t.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tenant %s (%s): %s, connection %s, credentials %s", t.Name, t.ID, c.Provider, c.ID, c.Credentials)
	if c.BaseURL != "" {
		fmt.Fprintf(stdout, ", API %s", c.BaseURL)
	}
	fmt.Fprintln(stdout)
	for _, m := range maps {
		fmt.Fprintf(stdout, "  %s -> %s\n", whose(m), m.CalendarID)
	}
	return nil
}

// whose says whose calendar a mapping is.
func whose(m oncecall.CalendarMapping) string {
	switch {
	case m.PractitionerID == uuid.Nil:
		return "the single calendar"
	case m.LocationID == uuid.Nil:
		return m.Practitioner + " (every location)"
	}
	return m.Practitioner + " at " + m.Location
}

func calendarDisconnect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	ref, err := tenantFlag("disconnect", args, stderr, nil)
	if err != nil {
		return err
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, ref)
	if err != nil {
		return err
	}
	if err := store.DisconnectCalendar(ctx, t.ID); errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("tenant %s has no calendar connection", t.Name)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tenant %s (%s): calendar disconnected; new bookings are oncecall's own (or the http provider's). "+
		"Appointments already in the calendar stay there.\n", t.Name, t.ID)
	return nil
}

// calendarCheck reads one day of each mapped calendar, with the secret as
// this machine reads it, and says what it found. It exits non-zero when a
// calendar could not be read.
func calendarCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var date string
	ref, err := tenantFlag("check", args, stderr, &date)
	if err != nil {
		return err
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, ref)
	if err != nil {
		return err
	}
	clock, _, err := store.TenantClock(ctx, t.ID)
	if err != nil {
		return err
	}
	loc := clock.Loc
	day := time.Now().In(loc)
	if date != "" {
		if day, err = time.ParseInLocation(time.DateOnly, date, loc); err != nil {
			return fmt.Errorf("--date %q: write YYYY-MM-DD", date)
		}
	}
	from := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
	to := from.AddDate(0, 0, 1)
	svc := calendars.New(calendars.Config{Store: store, Tuning: calendars.Tuning{Timeout: 15 * time.Second}})
	cal, tc, ok, err := svc.Calendar(ctx, t.ID)
	if !ok && err == nil {
		return fmt.Errorf("tenant %s has no calendar connection: oncecall calendar connect --tenant %s ...", t.Name, t.ID)
	}
	if err != nil {
		return fmt.Errorf("open the %s calendar: %w", tc.Conn.Provider, err)
	}
	fmt.Fprintf(stdout, "tenant %s: %s, %s (%s)\n", t.Name, tc.Conn.Provider, from.Format("Monday 2 January 2006"), loc)
	failed := 0
	for _, m := range tc.Maps {
		if err := checkOne(ctx, stdout, cal, m, from, to, loc); err != nil {
			failed++
			fmt.Fprintf(stdout, "  %s -> %s: cannot be read: %v\n", whose(m), m.CalendarID, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d calendars could not be read", failed, len(tc.Maps))
	}
	return nil
}

func checkOne(ctx context.Context, w io.Writer, cal calendar.Calendar, m oncecall.CalendarMapping, from, to time.Time, loc *time.Location) error {
	a, err := cal.Availability(ctx, m.CalendarID, from, to)
	if err != nil {
		return err
	}
	evs, err := cal.Events(ctx, calendar.EventQuery{CalendarID: m.CalendarID, From: from, To: to})
	if err != nil {
		return err
	}
	ours := 0
	for _, ev := range evs {
		if ev.Marks.Action != "" {
			ours++
		}
	}
	fmt.Fprintf(w, "  %s -> %s: %d event(s), %d booked through oncecall", whose(m), m.CalendarID, len(evs), ours)
	spans, what := a.Busy, "busy"
	if a.Slots {
		spans, what = a.Open, "open slots"
	}
	fmt.Fprintf(w, "; %s:", what)
	if len(spans) == 0 {
		fmt.Fprint(w, " none")
	}
	for _, s := range spans {
		fmt.Fprintf(w, " %s-%s", s.Start.In(loc).Format("15:04"), s.End.In(loc).Format("15:04"))
	}
	fmt.Fprintln(w)
	return nil
}

// calendarWatch asks the tenant's calendar provider to notify this
// deployment of every change of its calendars (Google watch channels,
// Microsoft Graph subscriptions, a Cal.com webhook), at the public URL's
// /v1/calendar-notifications/{provider}/{connection}. Channels and
// subscriptions expire; run it again before the expiry it prints.
func calendarWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("calendar watch", stderr)
	tenantRef := fs.String("tenant", "", "the tenant: its id, or its name (required)")
	public := fs.String("public-url", "", "the https URL where the provider reaches oncecall's servers (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || strings.TrimSpace(*tenantRef) == "" || strings.TrimSpace(*public) == "" {
		return errors.New(calendarUsage)
	}
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(*public), "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("--public-url must be an http(s) URL (the providers require https)")
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, strings.TrimSpace(*tenantRef))
	if err != nil {
		return err
	}
	c, err := store.CalendarConnection(ctx, t.ID)
	if errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("tenant %s has no calendar connection: oncecall calendar connect --tenant %s ...", t.Name, t.ID)
	}
	if err != nil {
		return err
	}
	address := u.String() + calendars.NotificationPath(c)
	svc := calendars.New(calendars.Config{Store: store, Tuning: calendars.Tuning{Timeout: 15 * time.Second}})
	watched, err := svc.Watch(ctx, t.ID, address)
	for _, w := range watched {
		fmt.Fprintf(stdout, "  %s: %s", cmpOr(w.Calendar, "every calendar"), w.ID)
		if !w.Expires.IsZero() {
			fmt.Fprintf(stdout, ", until %s", w.Expires.Format(time.RFC3339))
		}
		fmt.Fprintln(stdout)
	}
	if err != nil {
		return fmt.Errorf("watch the %s calendars: %w", c.Provider, err)
	}
	fmt.Fprintf(stdout, "tenant %s (%s): %s notifies %s of changes\n", t.Name, t.ID, c.Provider, address)
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
