package console

import (
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
)

type staffRow struct {
	oncecall.Operator
	Tenant   string
	Sessions int64
	Clock    schedule.Clock
}

type staffData struct {
	People []staffRow
	// Tenants are those a new person may be limited to; Scoped: the
	// admin's own only.
	Tenants []tenantInfo
	Scoped  bool
	// OIDC names the identity provider, when one is configured.
	OIDC string
	// Link is a one-time sign-in link just made, shown once, and For whom.
	Link, For string
	Roles     []oncecall.Role
}

// staffPage lists the staff an admin looks after (a tenant's admin: that
// tenant's people), with their open sessions.
func (c *Console) staffPage(w http.ResponseWriter, r *http.Request, s session) {
	p := page{Title: "Staff", Session: s}
	switch r.URL.Query().Get("done") {
	case "ended":
		p.Notice = "Their sessions are ended: they sign in again."
	case "disabled":
		p.Notice = "Disabled: they cannot sign in, and their sessions are ended."
	}
	c.showStaff(w, r, s, http.StatusOK, p, "", "")
}

// showStaff renders the staff page, with a sign-in link just made for
// whom, when there is one.
func (c *Console) showStaff(w http.ResponseWriter, r *http.Request, s session, status int, p page, link, whom string) {
	ts, err := c.tenants(r, s)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	people, err := c.cfg.Store.Operators(r.Context())
	if err != nil {
		c.internal(w, r, err)
		return
	}
	open, err := c.cfg.Store.OpenSessionCounts(r.Context())
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d := staffData{Tenants: ts.List, Scoped: s.Scoped(), Link: link, For: whom,
		Roles: []oncecall.Role{oncecall.RoleViewer, oncecall.RoleResolver, oncecall.RoleAdmin}}
	if c.cfg.OIDC != nil {
		d.OIDC = c.cfg.OIDC.Name()
	}
	for _, o := range people {
		if s.Scoped() && o.TenantID != s.TenantID {
			continue
		}
		row := staffRow{Operator: o, Sessions: open[o.ID], Tenant: "every tenant", Clock: ts.clock}
		if o.TenantID != uuid.Nil {
			row.Tenant = ts.of(o.TenantID).Name
		}
		d.People = append(d.People, row)
	}
	p.Data = d
	c.render(w, r, status, "staff", p)
}

// person is the person of the URL whom the admin looks after.
func (c *Console) person(w http.ResponseWriter, r *http.Request, s session) (oncecall.Operator, bool) {
	id, ok := c.pathID(w, r, "person")
	if !ok {
		return oncecall.Operator{}, false
	}
	o, err := c.cfg.Store.OperatorByID(r.Context(), id)
	switch {
	case errors.Is(err, db.ErrNotFound) || (err == nil && s.Scoped() && o.TenantID != s.TenantID):
		c.fail(w, r, http.StatusNotFound, "No such person.")
		return o, false
	case err != nil:
		c.internal(w, r, err)
		return o, false
	}
	return o, true
}

func (c *Console) staffEndSessions(w http.ResponseWriter, r *http.Request, s session) {
	o, ok := c.person(w, r, s)
	if !ok {
		return
	}
	if _, err := c.cfg.Staff.EndSessions(r.Context(), s.Actor, o.ID); err != nil {
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Info().Str("operator_id", o.ID.String()).Str("via", s.Actor.Via).Msg("console: sessions ended by an admin")
	http.Redirect(w, r, "/console/staff?done=ended", http.StatusSeeOther)
}

func (c *Console) staffDisable(w http.ResponseWriter, r *http.Request, s session) {
	o, ok := c.person(w, r, s)
	if !ok {
		return
	}
	if o.ID == s.Actor.OperatorID {
		c.fail(w, r, http.StatusBadRequest, "You cannot disable yourself: ask another admin.")
		return
	}
	if err := c.cfg.Staff.Disable(r.Context(), s.Actor, o.ID); err != nil {
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Info().Str("operator_id", o.ID.String()).Str("via", s.Actor.Via).Msg("console: person disabled by an admin")
	http.Redirect(w, r, "/console/staff?done=disabled", http.StatusSeeOther)
}
