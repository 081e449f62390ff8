package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/wire"
)

type actionData struct {
	Now        time.Time
	Clock      schedule.Clock
	View       wire.OperatorAction
	Action     oncecall.Action
	Tenant     string
	Platform   string
	CallID     string
	Tool       string
	KeyHash    string
	Derived    bool
	Envelope   string
	Request    string
	Steps      []oncecall.Step
	Events     []event
	Evidence   []evidenceRun
	Audit      []auditRow
	Words      words
	Truth      truth
	Checked    int64 // the steps' checks, counted
	Found      []foundEvent
	Resolvable bool
	Retryable  bool
	Held       bool
}

type event struct {
	oncecall.Event
	Text string
}

// evidenceKinds are the timeline events in which a driver or the
// reconciler recorded what it learned about a step.
var evidenceKinds = []string{"evidence", "inconclusive", "needs_operator", "lease_expired", "nudged", "waiting"}

func (c *Console) actionData(r *http.Request, s session, id uuid.UUID) (actionData, error) {
	d, err := c.cfg.Operator.Show(r.Context(), id)
	if err != nil {
		return actionData{}, err
	}
	a := d.Action
	if !s.sees(a.TenantID) {
		// Another tenant's action does not exist for this person.
		return actionData{}, db.ErrNotFound
	}
	view := wire.FromActionDetail(d)
	ts, err := c.tenants(r, s)
	if err != nil {
		return actionData{}, err
	}
	t := ts.of(a.TenantID)
	env, _ := json.Marshal(view.Envelope)
	platform, call := platformOf(a)
	out := actionData{
		Now: c.now(), Clock: t.Clock, View: view, Action: a, Tenant: t.Name, Platform: platform, CallID: call,
		KeyHash: idem.KeyHash(a.Key), Derived: strings.HasPrefix(a.Key, "derived:"),
		Envelope: pretty(env), Request: pretty(a.Request), Steps: d.Steps,
		Resolvable: a.State != oncecall.Completed || a.NeedsOperator,
		Retryable:  a.NeedsOperator,
		Held:       a.LeaseUntil != nil && a.LeaseUntil.After(c.now()),
	}
	if o, ok := c.cfg.Ops.Get(a.Operation); ok {
		out.Tool = o.Tool()
	}
	for _, st := range d.Steps {
		out.Checked += int64(st.Checks)
	}
	var evidence []oncecall.Event
	for _, e := range d.Events {
		out.Events = append(out.Events, event{Event: e, Text: compact(e.Detail)})
		if slices.Contains(evidenceKinds, e.Kind) {
			evidence = append(evidence, e)
		}
	}
	out.Evidence = summarise(evidence, t.Clock)
	entries, err := c.cfg.Store.Audit(r.Context(), db.AuditFilter{ActionID: a.ID, Limit: 100})
	if err != nil {
		return actionData{}, err
	}
	out.Audit = auditRows(entries, ts)
	out.Words, err = c.words(r, a, d, t)
	if err != nil {
		return actionData{}, err
	}
	if out.Truth, err = c.heardOf(r, a, t, request(a)); err != nil {
		return actionData{}, err
	}
	if out.Resolvable && s.Can("resolver") {
		out.Found = c.foundEvents(r, a, d.Steps, t.Clock)
	}
	return out, nil
}

func (c *Console) actionPage(w http.ResponseWriter, r *http.Request, s session) {
	id, ok := c.pathID(w, r, "action")
	if !ok {
		return
	}
	p := page{Title: "Action", Session: s}
	if o := r.URL.Query().Get("resolved"); o == string(oncecall.Confirmed) || o == string(oncecall.Rejected) {
		p.Notice = "Resolved as " + o + "."
	}
	switch r.URL.Query().Get("done") {
	case "retried":
		p.Notice = "Given back to the reconciler: it looks the writes up again."
	case "noted":
		p.Notice = "Your note is in the timeline."
	}
	c.showAction(w, r, s, http.StatusOK, id, p)
}

func (c *Console) showAction(w http.ResponseWriter, r *http.Request, s session, status int, id uuid.UUID, p page) {
	d, err := c.actionData(r, s, id)
	if errors.Is(err, db.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	p.Title = d.Words.Title
	p.Data = d
	c.render(w, r, status, "action", p)
}

// ownAction is the action of the URL when the person may act on it: 404
// for a missing one or another tenant's.
func (c *Console) ownAction(w http.ResponseWriter, r *http.Request, s session) (uuid.UUID, bool) {
	id, ok := c.pathID(w, r, "action")
	if !ok {
		return id, false
	}
	a, err := c.cfg.Store.ActionAnyTenant(r.Context(), id)
	switch {
	case errors.Is(err, db.ErrNotFound) || (err == nil && !s.sees(a.TenantID)):
		if err == nil {
			c.cfg.Log.Warn().Str("action_id", id.String()).Msg("console: refused another tenant's action")
		}
		c.fail(w, r, http.StatusNotFound, "No such action.")
		return id, false
	case err != nil:
		c.internal(w, r, err)
		return id, false
	}
	return id, true
}

// resolve applies the operator's resolution through the same function as
// POST /v1/ops/actions/{id}/resolve and answers with the API's statuses: a
// bad form 400, an action someone holds 409, an unknown one 404.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request, s session) {
	id, ok := c.ownAction(w, r, s)
	if !ok {
		return
	}
	form := map[string]string{}
	for _, k := range []string{"outcome", "provider_ref", "reason", "note"} {
		form[k] = strings.TrimSpace(r.PostFormValue(k))
	}
	if form["provider_ref"] == "" {
		// An event the form offered, chosen rather than typed.
		form["provider_ref"] = strings.TrimSpace(r.PostFormValue("found"))
	}
	a, err := c.cfg.Operator.Resolve(r.Context(), id, oncecall.Resolution{
		Outcome: oncecall.Outcome(form["outcome"]), ProviderRef: form["provider_ref"], Reason: form["reason"],
		Note: form["note"], Actor: s.Actor,
	})
	if err == nil {
		c.cfg.Log.Info().Str("action_id", a.ID.String()).Str("outcome", form["outcome"]).Str("via", s.Actor.Via).Msg("console: action resolved")
		http.Redirect(w, r, "/console/actions/"+a.ID.String()+"?resolved="+url.QueryEscape(form["outcome"]), http.StatusSeeOther)
		return
	}
	c.refused(w, r, s, id, form, "Not resolved", err)
}

// retry gives the action back to the reconciler (OperatorService.Retry).
func (c *Console) retry(w http.ResponseWriter, r *http.Request, s session) {
	id, ok := c.ownAction(w, r, s)
	if !ok {
		return
	}
	if _, err := c.cfg.Operator.Retry(r.Context(), id, s.Actor, ""); err != nil {
		c.refused(w, r, s, id, nil, "Not retried", err)
		return
	}
	c.cfg.Log.Info().Str("action_id", id.String()).Str("via", s.Actor.Via).Msg("console: action retried")
	http.Redirect(w, r, "/console/actions/"+id.String()+"?done=retried", http.StatusSeeOther)
}

// note adds the operator's note to the timeline (OperatorService.Note).
func (c *Console) note(w http.ResponseWriter, r *http.Request, s session) {
	id, ok := c.ownAction(w, r, s)
	if !ok {
		return
	}
	text := strings.TrimSpace(r.PostFormValue("text"))
	if err := c.cfg.Operator.Note(r.Context(), id, s.Actor, text); err != nil {
		c.refused(w, r, s, id, map[string]string{"text": text}, "Not noted", err)
		return
	}
	http.Redirect(w, r, "/console/actions/"+id.String()+"?done=noted", http.StatusSeeOther)
}

// refused shows the action again with why a change was refused, with the
// API's status.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, s session, id uuid.UUID, form map[string]string, what string, err error) {
	e := fault.As(err)
	if errors.Is(err, db.ErrNotFound) {
		e = fault.New(fault.NotFound, "no such action")
	}
	status := e.Code.HTTPStatus()
	switch {
	case status >= 500:
		c.internal(w, r, err)
		return
	case e.Code == fault.NotFound:
		c.fail(w, r, status, "No such action.")
		return
	}
	p := page{Session: s, Form: form, Error: what + ": " + e.Message + "."}
	if e.Code == fault.InFlight {
		p.Error = "Someone is working on it (a request, the reconciler or another operator holds the action; a step may be in flight). Look again in a moment: nothing was changed."
	}
	c.showAction(w, r, s, status, id, p)
}
