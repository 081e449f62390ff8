package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/staff"
)

// staffAdd adds a person to the staff (an admin's doing, audited by the
// staff service as person_added) and shows the one-time sign-in link to
// give them, once. An admin of one tenant adds people of that tenant only.
func (c *Console) staffAdd(w http.ResponseWriter, r *http.Request, s session) {
	form := map[string]string{}
	for _, k := range []string{"name", "email", "role", "tenant"} {
		form[k] = strings.TrimSpace(r.PostFormValue(k))
	}
	p := staff.Person{Name: form["name"], Email: form["email"], Role: oncecall.Role(form["role"])}
	refuse := func(msg string) {
		c.showStaff(w, r, s, http.StatusBadRequest, page{Title: "Staff", Session: s, Form: form, Error: msg}, "", "")
	}
	switch {
	case s.Scoped():
		p.TenantID = s.TenantID
	case form["tenant"] != "":
		id, err := uuid.Parse(form["tenant"])
		if err != nil {
			refuse("Not added: choose the tenant from the list.")
			return
		}
		p.TenantID = id
	}
	if p.TenantID != uuid.Nil {
		if _, err := c.cfg.Store.TenantByID(r.Context(), p.TenantID); err != nil {
			refuse("Not added: choose the tenant from the list.")
			return
		}
	}
	o, secret, err := c.cfg.Staff.Add(r.Context(), s.Actor, p)
	if fault.CodeOf(err) == fault.InvalidInput {
		refuse("Not added: the " + fault.As(err).Message + ".")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Info().Str("operator_id", o.ID.String()).Str("via", s.Actor.Via).Msg("console: person added by an admin")
	notice := "Added " + o.Name + " as " + string(o.Role) + ". Give them the sign-in link below, to them alone: it works once, for 72 hours."
	c.showStaff(w, r, s, http.StatusOK, page{Title: "Staff", Session: s, Notice: notice}, c.linkURL(r, secret), o.Name)
}

// staffLink makes another one-time sign-in link for a person (a
// forgotten password, an expired link), audited as link_made.
func (c *Console) staffLink(w http.ResponseWriter, r *http.Request, s session) {
	o, ok := c.person(w, r, s)
	if !ok {
		return
	}
	_, secret, err := c.cfg.Staff.NewLink(r.Context(), s.Actor, o.Email)
	if fault.CodeOf(err) == fault.NotFound {
		c.fail(w, r, http.StatusNotFound, "No such person: a disabled person gets no sign-in link.")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Info().Str("operator_id", o.ID.String()).Str("via", s.Actor.Via).Msg("console: sign-in link made by an admin")
	notice := "A new sign-in link for " + o.Name + ": give it to them alone. Their password, if any, stays until they use it."
	c.showStaff(w, r, s, http.StatusOK, page{Title: "Staff", Session: s, Notice: notice}, c.linkURL(r, secret), o.Name)
}

// linkURL is a one-time sign-in link under oncecall's public URL, else
// the address the admin reached the console at.
func (c *Console) linkURL(r *http.Request, secret string) string {
	base := strings.TrimRight(c.cfg.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if secure(r) {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + "/console/welcome?t=" + url.QueryEscape(secret)
}
