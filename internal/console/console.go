// Package console is the operator console: server-rendered pages, embedded
// in the binary, where staff list the actions waiting for a person, open
// one, and resolve it with the same code path as /v1/ops and `oncecall
// actions resolve` (reconcile.Resolve). It is mounted under /console/ only
// when an operator token is configured (docs/console.md).
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/tokenguard"
	"github.com/oncecall/oncecall/reconcile"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what the console needs.
type Config struct {
	Store *db.Store
	Ops   *op.Registry
	// Token is the operator token that signs in; it must not be empty.
	// Guard checks it and slows down guessing it (default: a guard of
	// Token of its own; the app shares one with /v1/ops).
	Token string
	Guard *tokenguard.Guard
	// Resolve applies an operator's resolution: the same function /v1/ops
	// calls (reconcile.Resolve).
	Resolve func(ctx context.Context, id uuid.UUID, r reconcile.Resolution) (oncecall.Action, error)
	// SessionTTL is how long a sign-in lasts. Default 8h.
	SessionTTL time.Duration
	// Refresh is how often the queue reloads its rows. Default 5s.
	Refresh time.Duration
	Log     zerolog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Console serves the console's pages.
type Console struct {
	cfg   Config
	key   []byte
	pages map[string]*template.Template
	now   func() time.Time
}

// csp allows only the console's own script and style: no inline code, no
// other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New returns the console's handler; every path it serves starts with
// /console/.
func New(cfg Config) (http.Handler, error) {
	if cfg.Token == "" {
		return nil, errors.New("the console needs the operator token")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Guard == nil {
		cfg.Guard = tokenguard.New(cfg.Token, tokenguard.Config{})
	}
	c := &Console{cfg: cfg, key: sessionKey(cfg.Token), now: cfg.Now}
	if err := c.parse(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /console/signin", c.signInPage)
	mux.HandleFunc("POST /console/signin", c.signIn)
	mux.HandleFunc("POST /console/signout", c.signOut)
	mux.Handle("GET /console/{$}", c.signedIn(c.queuePage))
	mux.Handle("GET /console/queue", c.signedIn(c.queueRows))
	mux.Handle("GET /console/search", c.signedIn(c.searchPage))
	mux.Handle("GET /console/actions/{id}", c.signedIn(c.actionPage))
	mux.Handle("POST /console/actions/{id}/resolve", c.signedIn(c.resolve))
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

type sessionHandler func(w http.ResponseWriter, r *http.Request, s session)

// signedIn admits requests with a valid session; a page request without
// one goes to the sign-in page, anything else gets 401.
func (c *Console) signedIn(next sessionHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.current(r)
		if !ok {
			if r.Method == http.MethodGet && r.Header.Get("X-Console-Fetch") == "" {
				http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
				return
			}
			c.fail(w, r, http.StatusUnauthorized, "Your session has ended: sign in again.")
			return
		}
		next(w, r, s)
	})
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.current(r); ok {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in"})
}

func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	token, name := r.PostFormValue("token"), r.PostFormValue("name")
	p := page{Title: "Sign in", Form: map[string]string{"name": name}}
	right, wait := c.cfg.Guard.Check(r.RemoteAddr, token)
	if wait > 0 {
		c.cfg.Log.Warn().Msg("console: sign-in refused after too many wrong operator tokens")
		secs := max(1, int((wait+time.Second-1)/time.Second))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		p.Error = fmt.Sprintf("Too many wrong operator tokens: try again in %d seconds.", secs)
		c.render(w, r, http.StatusTooManyRequests, "signin", p)
		return
	}
	if !right {
		c.cfg.Log.Warn().Msg("console: sign-in with a wrong operator token")
		p.Error = "That is not the operator token."
		c.render(w, r, http.StatusUnauthorized, "signin", p)
		return
	}
	if msg := validName(name); msg != "" {
		p.Error = "Give your name: " + msg + ". It is recorded with each resolution."
		c.render(w, r, http.StatusBadRequest, "signin", p)
		return
	}
	c.setSession(w, r, session{Name: name, Expires: c.now().Add(c.cfg.SessionTTL)})
	c.cfg.Log.Info().Msg("console: operator signed in")
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	clearSession(w, r)
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
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
