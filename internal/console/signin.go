package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/staff"
)

type signInData struct {
	OIDC       string // the identity provider's name; empty without one
	BreakGlass bool   // the shared operator token is configured
}

func (c *Console) signInData() signInData {
	d := signInData{BreakGlass: c.cfg.Token != ""}
	if c.cfg.OIDC != nil {
		d.OIDC = c.cfg.OIDC.Name()
	}
	return d
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.current(r); ok {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", Data: c.signInData()})
}

// signIn signs a person in with their e-mail address and password, or,
// when the form carries the operator token, opens a break-glass session.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("token") != "" || r.PostFormValue("how") == "token" {
		c.breakGlass(w, r)
		return
	}
	email, password := strings.TrimSpace(r.PostFormValue("email")), r.PostFormValue("password")
	p := page{Title: "Sign in", Form: map[string]string{"email": email}, Data: c.signInData()}
	sg, wait, err := c.cfg.Staff.SignIn(r.Context(), r.RemoteAddr, email, password)
	switch {
	case wait > 0:
		c.cfg.Log.Warn().Msg("console: sign-in refused after too many wrong passwords")
		c.tooMany(w, r, p, wait, "Too many wrong sign-ins")
	case errors.Is(err, staff.ErrWrongPassword):
		c.cfg.Log.Warn().Msg("console: sign-in with a wrong e-mail address or password")
		p.Error = "Wrong e-mail address or password."
		c.render(w, r, http.StatusUnauthorized, "signin", p)
	case err != nil:
		c.internal(w, r, err)
	default:
		c.cfg.Log.Info().Str("operator_id", sg.Session.Actor.OperatorID.String()).Msg("console: signed in")
		c.setSession(w, r, sg)
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
	}
}

func (c *Console) tooMany(w http.ResponseWriter, r *http.Request, p page, wait time.Duration, what string) {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	p.Error = fmt.Sprintf("%s: try again in %d seconds.", what, secs)
	c.render(w, r, http.StatusTooManyRequests, "signin", p)
}

// breakGlass opens an admin session of every tenant for the holder of the
// shared operator token, under the name they give: for when no person of
// the staff can sign in. It is logged and audited as break-glass.
func (c *Console) breakGlass(w http.ResponseWriter, r *http.Request) {
	token, name := r.PostFormValue("token"), strings.TrimSpace(r.PostFormValue("name"))
	p := page{Title: "Sign in", Form: map[string]string{"name": name}, Data: c.signInData()}
	if c.cfg.Token == "" {
		p.Error = "Break-glass sign-in is off: no operator token is configured."
		c.render(w, r, http.StatusUnauthorized, "signin", p)
		return
	}
	right, wait := c.cfg.Guard.Check(r.RemoteAddr, token)
	if wait > 0 {
		c.cfg.Log.Warn().Msg("console: sign-in refused after too many wrong operator tokens")
		c.tooMany(w, r, p, wait, "Too many wrong operator tokens")
		return
	}
	if !right {
		c.cfg.Log.Warn().Msg("console: break-glass sign-in with a wrong operator token")
		p.Error = "That is not the operator token."
		c.render(w, r, http.StatusUnauthorized, "signin", p)
		return
	}
	sg, err := c.cfg.Staff.BreakGlass(r.Context(), name)
	if fault.CodeOf(err) == fault.InvalidInput {
		p.Error = "Give your name: it " + strings.TrimPrefix(fault.As(err).Message, "name ") + ". It is recorded with everything you do."
		c.render(w, r, http.StatusBadRequest, "signin", p)
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Warn().Str("session_id", sg.Session.ID.String()).Msg("console: break-glass sign-in with the shared operator token")
	c.setSession(w, r, sg)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// signOut ends the session (its row, so a copy of the cookie is refused
// too) and removes the cookie.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(cookieName); err == nil {
		if err := c.cfg.Staff.SignOut(r.Context(), ck.Value); err != nil {
			c.internal(w, r, err)
			return
		}
	}
	clearSession(w, r)
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

// welcomePage is where a one-time sign-in link lands: the person chooses
// their password.
func (c *Console) welcomePage(w http.ResponseWriter, r *http.Request) {
	secret := r.URL.Query().Get("t")
	ok, err := c.cfg.Staff.LinkValid(r.Context(), secret)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	if !ok {
		c.render(w, r, http.StatusNotFound, "error", page{Title: "Sign-in link", Error: "This sign-in link was used already, has expired, or is not one: ask an admin for a new one."})
		return
	}
	c.render(w, r, http.StatusOK, "welcome", page{Title: "Choose your password", Form: map[string]string{"t": secret}})
}

func (c *Console) welcome(w http.ResponseWriter, r *http.Request) {
	secret, password := r.PostFormValue("t"), r.PostFormValue("password")
	p := page{Title: "Choose your password", Form: map[string]string{"t": secret}}
	if password != r.PostFormValue("again") {
		p.Error = "The two passwords differ."
		c.render(w, r, http.StatusBadRequest, "welcome", p)
		return
	}
	sg, err := c.cfg.Staff.UseLink(r.Context(), secret, password)
	switch fault.CodeOf(err) {
	case "":
	case fault.InvalidInput:
		p.Error = "Choose another password: it " + strings.TrimPrefix(fault.As(err).Message, "password ") + "."
		c.render(w, r, http.StatusBadRequest, "welcome", p)
		return
	case fault.NotFound:
		c.render(w, r, http.StatusNotFound, "error", page{Title: "Sign-in link", Error: "This sign-in link was used already, has expired, or is not one: ask an admin for a new one."})
		return
	default:
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Info().Str("operator_id", sg.Session.Actor.OperatorID.String()).Msg("console: signed in with a one-time link")
	c.setSession(w, r, sg)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// oidcCookie keeps a sign-in through the identity provider under way: its
// state, nonce and PKCE verifier. It is Lax, not Strict, because the
// provider's redirect back is a navigation from another site.
const oidcCookie = "oncecall_oidc"

func (c *Console) oidcStart(w http.ResponseWriter, r *http.Request) {
	if c.cfg.OIDC == nil {
		c.fail(w, r, http.StatusNotFound, "Signing in through an identity provider is not configured.")
		return
	}
	st := staff.NewStart()
	u, err := c.cfg.OIDC.AuthURL(r.Context(), st)
	if err != nil {
		c.cfg.Log.Error().Err(err).Msg("console: the identity provider")
		c.render(w, r, http.StatusBadGateway, "signin", page{Title: "Sign in", Data: c.signInData(),
			Error: "The identity provider could not be reached: try again, or sign in with your password."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: oidcCookie, Value: st.State + "." + st.Nonce + "." + st.Verifier, Path: "/console/oidc/", MaxAge: 600,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure(r),
	})
	http.Redirect(w, r, u, http.StatusSeeOther)
}

func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if c.cfg.OIDC == nil {
		c.fail(w, r, http.StatusNotFound, "Signing in through an identity provider is not configured.")
		return
	}
	refuse := func(status int, msg string) {
		c.render(w, r, status, "signin", page{Title: "Sign in", Data: c.signInData(), Error: msg})
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/console/oidc/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure(r)})
	ck, err := r.Cookie(oidcCookie)
	var st staff.Start
	if err == nil {
		parts := strings.Split(ck.Value, ".")
		if len(parts) == 3 {
			st = staff.Start{State: parts[0], Nonce: parts[1], Verifier: parts[2]}
		}
	}
	q := r.URL.Query()
	switch {
	case q.Get("error") != "":
		refuse(http.StatusUnauthorized, "The identity provider did not sign you in.")
		return
	case st.State == "" || q.Get("state") != st.State:
		c.cfg.Log.Warn().Msg("console: identity provider callback without this browser's sign-in (state)")
		refuse(http.StatusBadRequest, "This sign-in was not started here, or took too long: start again.")
		return
	}
	email, err := c.cfg.OIDC.Finish(r.Context(), st, q.Get("code"))
	if err != nil {
		c.cfg.Log.Warn().Err(err).Msg("console: identity provider sign-in refused")
		refuse(http.StatusUnauthorized, "The identity provider's answer could not be verified: start again.")
		return
	}
	sg, err := c.cfg.Staff.SignInAs(r.Context(), email, oncecall.ViaOIDC)
	if fault.CodeOf(err) == fault.Forbidden {
		c.cfg.Log.Warn().Msg("console: identity provider vouched for someone not on the staff")
		refuse(http.StatusForbidden, "You are not on the console's staff: ask an admin to add your e-mail address.")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Info().Str("operator_id", sg.Session.Actor.OperatorID.String()).Msg("console: signed in through the identity provider")
	c.setSession(w, r, sg)
	// A page of this site moves on to the queue: the browser sends a
	// SameSite=Strict cookie on a navigation this site starts, not on the
	// end of a redirect chain another site started.
	c.render(w, r, http.StatusOK, "signedin", page{Title: "Signed in"})
}
