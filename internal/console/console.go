// Package console is the operator console: server-rendered pages, embedded
// in the binary, where named staff list the actions waiting for a person,
// read one in words, resolve or retry it (alone or in bulk, with the same
// operator service as /v1/ops: oncecall.OperatorService),
// find a customer's actions, work through follow-up calls and read the
// audit trail of who did what (docs/console.md). People and sessions are
// internal/staff's; the shared operator token only opens a break-glass
// session.
package console

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/internal/staff"
	"github.com/oncecall/oncecall/internal/tokenguard"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what the console needs.
type Config struct {
	Store *db.Store
	Ops   *op.Registry
	// Staff signs people in and keeps their sessions.
	Staff *staff.Staff
	// OIDC, when set, offers signing in through the identity provider.
	OIDC *staff.OIDC
	// Token is the shared operator token: it opens a break-glass admin
	// session, logged and audited as such. Empty: no break-glass sign-in.
	// Guard checks it and slows down guessing it (default: a guard of
	// Token of its own; the app shares one with /v1/ops).
	Token string
	Guard *tokenguard.Guard
	// Operator shows, resolves, retries and notes actions: the same
	// service /v1/ops calls (reconcile.Operator).
	Operator oncecall.OperatorService
	// Zone is where times are shown that belong to no tenant (sign-ins in
	// the audit trail). Default time.Local.
	Zone *time.Location
	// Calendars, when set, reads the businesses' own calendars: the
	// resolve form of a stuck booking offers the events found at its time.
	Calendars CalendarEvents
	// PublicURL is oncecall's public URL, under which the sign-in links
	// an admin makes are given; empty: the address the admin used.
	PublicURL string
	// Refresh is how often the queue reloads its rows. Default 5s.
	Refresh time.Duration
	Log     zerolog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// TraceURL, when set, is the trace viewer's URL of a trace, with
	// TraceIDPlaceholder where its id goes (such as
	// https://jaeger.example/trace/{trace_id}): an action's page links the
	// trace of the request that claimed it.
	TraceURL string
}

// Console serves the console's pages.
type Console struct {
	cfg   Config
	pages map[string]*template.Template
	now   func() time.Time
	clock schedule.Clock // Zone's, for what belongs to no tenant
}

// csp allows only the console's own script and style: no inline code, no
// other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New returns the console's handler; every path it serves starts with
// /console/.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil || cfg.Staff == nil || cfg.Ops == nil || cfg.Operator == nil {
		return nil, errors.New("the console needs the store, the staff, the operations and the operator service")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Zone == nil {
		cfg.Zone = time.Local
	}
	if cfg.Token != "" && cfg.Guard == nil {
		cfg.Guard = tokenguard.New(cfg.Token, tokenguard.Config{})
	}
	c := &Console{cfg: cfg, now: cfg.Now, clock: schedule.Clock{Zone: cfg.Zone.String(), Loc: cfg.Zone, Locale: schedule.EnGB}}
	if err := c.parse(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	viewer, resolver, admin := oncecall.RoleViewer, oncecall.RoleResolver, oncecall.RoleAdmin
	mux := http.NewServeMux()
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /console/signin", c.signInPage)
	mux.HandleFunc("POST /console/signin", c.signIn)
	mux.HandleFunc("GET /console/welcome", c.welcomePage)
	mux.HandleFunc("POST /console/welcome", c.welcome)
	mux.HandleFunc("GET /console/oidc/start", c.oidcStart)
	mux.HandleFunc("GET /console/oidc/callback", c.oidcCallback)
	mux.HandleFunc("POST /console/signout", c.signOut)
	mux.Handle("GET /console/{$}", c.allow(viewer, c.queuePage))
	mux.Handle("GET /console/queue", c.allow(viewer, c.queueRows))
	mux.Handle("GET /console/bulk", c.allow(resolver, c.bulkPreview))
	mux.Handle("POST /console/bulk", c.allow(resolver, c.bulkApply))
	mux.Handle("GET /console/search", c.allow(viewer, c.searchPage))
	mux.Handle("GET /console/tasks", c.allow(viewer, c.tasksPage))
	mux.Handle("POST /console/tasks/{kind}/{id}/done", c.allow(resolver, c.taskDone))
	mux.Handle("GET /console/audit", c.allow(viewer, c.auditPage))
	mux.Handle("GET /console/audit.csv", c.allow(viewer, c.auditCSV))
	mux.Handle("GET /console/staff", c.allow(admin, c.staffPage))
	mux.Handle("POST /console/staff/{id}/end-sessions", c.allow(admin, c.staffEndSessions))
	mux.Handle("POST /console/staff/{id}/disable", c.allow(admin, c.staffDisable))
	mux.Handle("POST /console/staff", c.allow(admin, c.staffAdd))
	mux.Handle("POST /console/staff/{id}/link", c.allow(admin, c.staffLink))
	mux.Handle("GET /console/actions/{id}", c.allow(viewer, c.actionPage))
	mux.Handle("POST /console/actions/{id}/resolve", c.allow(resolver, c.resolve))
	mux.Handle("POST /console/actions/{id}/retry", c.allow(resolver, c.retry))
	mux.Handle("POST /console/actions/{id}/note", c.allow(resolver, c.note))
	mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "There is no such page in the console.")
	})

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.cfg.Log.Warn().Str("path", r.URL.Path).Msg("console: cross-origin request refused")
		c.fail(w, r, http.StatusForbidden, "Cross-origin request refused: the console accepts changes only from its own pages.")
	}))
	return headers(cop.Handler(limitBody(mux))), nil
}

// headers sets what every console answer carries.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// limitBody caps form posts: the largest is a resolution with its note.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 32<<10)
		next.ServeHTTP(w, r)
	})
}

// fail answers with an error page (or, for the queue's refresh, the
// message alone).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if r.Header.Get("X-Console-Fetch") != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(msg)) //nolint:errcheck // the client went away
		return
	}
	s, _ := c.current(r)
	c.render(w, r, status, "error", page{Title: "Error", Error: msg, Session: s})
}

// internal logs err and answers 500 without its detail.
func (c *Console) internal(w http.ResponseWriter, r *http.Request, err error) {
	c.cfg.Log.Error().Err(err).Str("path", r.URL.Path).Msg("console")
	c.fail(w, r, http.StatusInternalServerError, "Something went wrong reading the database; try again.")
}

// pathID reads the {id} of the URL; a malformed one is a 404.
func (c *Console) pathID(w http.ResponseWriter, r *http.Request, what string) (uuid.UUID, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("No such %s.", what))
		return uuid.UUID{}, false
	}
	return id, true
}
