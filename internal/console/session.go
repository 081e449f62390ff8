package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/staff"
)

// cookieName is the session cookie; it lives under /console/ only and
// holds a random secret whose hash is the session's row (internal/staff):
// the session ends on every replica when its row is revoked.
const cookieName = "oncecall_console"

// session is the signed-in person as the pages see them.
type session struct {
	Actor    oncecall.Actor
	Name     string // as shown: the person's name, "(break-glass)" added
	Email    string
	Role     oncecall.Role
	TenantID uuid.UUID // uuid.Nil: every tenant
	Expires  time.Time
	secret   string
}

// BreakGlass reports whether the session was opened with the shared token.
func (s session) BreakGlass() bool { return s.Actor.Via == oncecall.ViaBreakGlass }

// Can reports whether the person may do what role may.
func (s session) Can(role string) bool { return s.Role.Allows(oncecall.Role(role)) }

// Scoped reports whether the person sees one tenant only.
func (s session) Scoped() bool { return s.TenantID != uuid.Nil }

// sees reports whether the person may see a tenant's records.
func (s session) sees(tenant uuid.UUID) bool { return !s.Scoped() || s.TenantID == tenant }

func sessionOf(d db.Session, secret string) session {
	s := session{Actor: d.Actor, Name: d.Actor.Name, Email: d.Email, Role: d.Role, TenantID: d.TenantID, Expires: d.ExpiresAt, secret: secret}
	if s.BreakGlass() {
		s.Name += " (break-glass)"
	}
	return s
}

// current is the request's session, if it has one still open.
func (c *Console) current(r *http.Request) (session, bool) {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return session{}, false
	}
	d, err := c.cfg.Staff.Session(r.Context(), ck.Value)
	if err != nil {
		if !errors.Is(err, db.ErrNotFound) {
			c.cfg.Log.Error().Err(err).Msg("console: read a session")
		}
		return session{}, false
	}
	return sessionOf(d, ck.Value), true
}

type sessionHandler func(w http.ResponseWriter, r *http.Request, s session)

// allow admits requests with an open session whose role allows what need
// does: a page request without a session goes to the sign-in page,
// anything else gets 401; a role that does not allow it gets 403.
func (c *Console) allow(need oncecall.Role, next sessionHandler) http.Handler {
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
		if !s.Role.Allows(need) {
			c.cfg.Log.Warn().Str("path", r.URL.Path).Str("role", string(s.Role)).Msg("console: refused to a role")
			c.fail(w, r, http.StatusForbidden, "Your role ("+string(s.Role)+") does not allow this: it needs "+string(need)+". Ask an admin.")
			return
		}
		next(w, r, s)
	})
}

// secure reports whether the browser reached the console over TLS, directly
// or through a proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (c *Console) setSession(w http.ResponseWriter, r *http.Request, sg staff.Signed) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: sg.Secret, Path: "/console/", Expires: sg.Session.ExpiresAt,
		MaxAge: max(1, int(time.Until(sg.Session.ExpiresAt).Seconds())), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/console/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
}
