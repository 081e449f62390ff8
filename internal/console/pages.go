package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
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

// page is what every template gets.
type page struct {
	Title   string
	Session session
	Error   string
	Notice  string
	Form    map[string]string
	Data    any
}

var funcs = template.FuncMap{
	"ago": func(now, t time.Time) string { return ago(now.Sub(t)) },
	// at is a time on the wall clock of a zone, with the zone's name.
	"at": local,
	"atp": func(t *time.Time, c schedule.Clock) string {
		if t == nil {
			return "–"
		}
		return local(*t, c)
	},
	"dash": func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	},
	"pretty": pretty,
	"results": func(now time.Time, rows []row) any {
		return struct {
			Now  time.Time
			Rows []row
		}{now, rows}
	},
	"provider": providerName,
}

// local is a time on a business's wall clock, with its zone: "Thu 12 Mar
// 2026, 15:30 CET" (en-GB) or "Thu Mar 12 2026, 3:30 PM EDT" (en-US).
func local(t time.Time, c schedule.Clock) string {
	if t.IsZero() {
		return "–"
	}
	t = t.In(c.Loc)
	if c.Locale == schedule.EnUS {
		return t.Format("Mon Jan 2 2006, 3:04:05 PM MST")
	}
	return t.Format("Mon 2 Jan 2006, 15:04:05 MST")
}

func (c *Console) parse() error {
	c.pages = map[string]*template.Template{}
	for _, name := range []string{"signin", "welcome", "signedin", "error", "queue", "action", "search", "bulk", "tasks", "audit", "staff"} {
		t, err := template.New("layout.html").Funcs(funcs).Funcs(c.traceFuncs()).ParseFS(templateFS, "templates/layout.html", "templates/rows.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("console template %s: %w", name, err)
		}
		c.pages[name] = t
	}
	return nil
}

// render writes a whole page; templates escape everything they show.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	c.write(w, r, status, c.pages[name], "layout.html", p)
}

func (c *Console) write(w http.ResponseWriter, r *http.Request, status int, t *template.Template, name string, data any) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		c.cfg.Log.Error().Err(err).Str("path", r.URL.Path).Msg("console: render")
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

// tenantInfo is what pages show of a tenant: its name and its clock.
type tenantInfo struct {
	ID    uuid.UUID
	Name  string
	Clock schedule.Clock
}

// tenants are the tenants the person sees, by name, and every tenant by id.
type tenants struct {
	List  []tenantInfo
	byID  map[uuid.UUID]tenantInfo
	clock schedule.Clock // for what belongs to no tenant
}

func (ts tenants) of(id uuid.UUID) tenantInfo {
	if t, ok := ts.byID[id]; ok {
		return t
	}
	if id == uuid.Nil {
		return tenantInfo{Name: "every tenant", Clock: ts.clock}
	}
	return tenantInfo{ID: id, Name: "tenant " + id.String()[:8], Clock: ts.clock}
}

func (c *Console) tenants(r *http.Request, s session) (tenants, error) {
	list, err := c.cfg.Store.Tenants(r.Context())
	if err != nil {
		return tenants{}, err
	}
	ts := tenants{byID: make(map[uuid.UUID]tenantInfo, len(list)), clock: c.clock}
	for _, t := range list {
		info := tenantInfo{ID: t.ID, Name: t.Name, Clock: t.Clock}
		ts.byID[t.ID] = info
		if s.sees(t.ID) {
			ts.List = append(ts.List, info)
		}
	}
	// A person of one tenant sees times on its clock everywhere.
	if s.Scoped() {
		ts.clock = ts.of(s.TenantID).Clock
	}
	return ts, nil
}

// row is an action as lists show it.
type row struct {
	ID        uuid.UUID
	Tenant    string
	Clock     schedule.Clock
	Operation string
	What      string // the operation in words
	Customer  string // the customer's name, when the action names one
	Queue     string // needs_operator, running, unknown or completed
	Outcome   string
	CreatedAt time.Time
	Platform  string
	CallID    string
}

func (c *Console) rows(r *http.Request, actions []oncecall.Action, ts tenants) []row {
	names := c.customerNames(r, actions)
	out := make([]row, len(actions))
	for i, a := range actions {
		q := string(a.State)
		if a.NeedsOperator {
			q = "needs_operator"
		}
		t := ts.of(a.TenantID)
		platform, call := platformOf(a)
		out[i] = row{
			ID: a.ID, Tenant: t.Name, Clock: t.Clock, Operation: a.Operation, What: c.operationWords(a.Operation),
			Customer: names[a.ID], Queue: q, Outcome: string(a.Outcome), CreatedAt: a.CreatedAt, Platform: platform, CallID: call,
		}
	}
	return out
}

// queueStates are the queue's states, in the order the counts show them.
var queueStates = []string{"needs_operator", "unknown", "running"}

// ages are the age filter's choices.
var ages = []string{"1m", "5m", "15m", "1h", "24h"}

type queueData struct {
	Now       time.Time
	Filter    map[string]string
	Query     template.URL
	Tenants   []tenantInfo
	Scoped    bool
	Ops       []string
	States    []string
	Ages      []string
	Providers []string
	Counts    []count
	Total     int64
	Rows      []row
	Refresh   int64 // milliseconds
	Truncated bool
	CanBulk   bool
}

type count struct {
	State string
	N     int64
}

const queueLimit = 200

// providerKinds are the provider filter's choices: the kinds a step can
// be planned for.
var providerKinds = []string{"http", "stripe", "twilio", "google", "microsoft", "calcom", "local"}

// queueFilter reads the queue's filters (also the bulk pages'); a bad one
// is an error to show. A person of one tenant always has it as filter.
func (c *Console) queueFilter(q url.Values, s session) (db.QueueFilter, map[string]string, error) {
	f := db.QueueFilter{Operation: q.Get("operation"), State: q.Get("state"), Provider: q.Get("provider"),
		Error: strings.TrimSpace(q.Get("error")), Limit: queueLimit + 1}
	form := map[string]string{"tenant": q.Get("tenant"), "operation": f.Operation, "state": f.State, "age": q.Get("age"),
		"provider": f.Provider, "error": f.Error}
	if v := q.Get("tenant"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, form, errors.New("the tenant filter must be a tenant id")
		}
		f.Tenant = &id
	}
	if s.Scoped() {
		if f.Tenant != nil && *f.Tenant != s.TenantID {
			return f, form, errors.New("the tenant filter must be your tenant")
		}
		f.Tenant, form["tenant"] = &s.TenantID, s.TenantID.String()
	}
	if f.Operation != "" {
		if _, ok := c.cfg.Ops.Get(f.Operation); !ok {
			return f, form, errors.New("the operation filter must be one of oncecall's operations")
		}
	}
	if f.State != "" && !slices.Contains(queueStates, f.State) {
		return f, form, errors.New("the state filter must be needs_operator, unknown or running")
	}
	if f.Provider != "" && !slices.Contains(providerKinds, f.Provider) {
		return f, form, errors.New("the provider filter must be one of " + strings.Join(providerKinds, ", "))
	}
	if len(f.Error) > 200 {
		return f, form, errors.New("the error filter must be at most 200 characters")
	}
	if v := q.Get("age"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > 365*24*time.Hour {
			return f, form, errors.New("the age filter must be a duration such as 5m or 24h")
		}
		f.MinAge = d
	}
	return f, form, nil
}

// encodeFilter is a query string of the filters set. It is a
// template.URL, safe by construction (url.Values.Encode): a string would be
// escaped whole in an href's query, its = and & with it.
func encodeFilter(form map[string]string) template.URL {
	v := url.Values{}
	for k, val := range form {
		if val != "" {
			v.Set(k, val)
		}
	}
	return template.URL(v.Encode()) //nolint:gosec // url.Values.Encode escapes every value
}

func (c *Console) queueData(r *http.Request, s session) (queueData, error) {
	f, form, err := c.queueFilter(r.URL.Query(), s)
	if err != nil {
		return queueData{}, fault.New(fault.InvalidInput, "%s", err.Error())
	}
	ts, err := c.tenants(r, s)
	if err != nil {
		return queueData{}, err
	}
	actions, err := c.cfg.Store.Queue(r.Context(), f)
	if err != nil {
		return queueData{}, err
	}
	counts, err := c.cfg.Store.QueueCounts(r.Context(), f)
	if err != nil {
		return queueData{}, err
	}
	d := queueData{
		Now: c.now(), Filter: form, Tenants: ts.List, Scoped: s.Scoped(), States: queueStates, Ages: ages,
		Providers: providerKinds, Refresh: c.cfg.Refresh.Milliseconds(), CanBulk: s.Can("resolver"),
	}
	for _, o := range c.cfg.Ops.All() {
		d.Ops = append(d.Ops, o.Name())
	}
	for _, st := range queueStates {
		d.Counts = append(d.Counts, count{State: st, N: counts[st]})
		d.Total += counts[st]
	}
	if len(actions) > queueLimit {
		actions, d.Truncated = actions[:queueLimit], true
	}
	d.Rows = c.rows(r, actions, ts)
	d.Query = encodeFilter(form)
	return d, nil
}

func (c *Console) queuePage(w http.ResponseWriter, r *http.Request, s session) {
	d, err := c.queueData(r, s)
	if fault.CodeOf(err) == fault.InvalidInput {
		c.fail(w, r, http.StatusBadRequest, fault.As(err).Message)
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "queue", page{Title: "Queue", Session: s, Data: d})
}

// queueRows is the queue's counts and rows alone, which the page fetches
// to refresh itself.
func (c *Console) queueRows(w http.ResponseWriter, r *http.Request, s session) {
	d, err := c.queueData(r, s)
	if fault.CodeOf(err) == fault.InvalidInput {
		c.fail(w, r, http.StatusBadRequest, fault.As(err).Message)
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.write(w, r, http.StatusOK, c.pages["queue"], "queue-rows", d)
}

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

// ago is a short age: 45s, 12m, 3h 5m, 2d 4h.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

func pretty(raw []byte) string {
	var buf bytes.Buffer
	if len(raw) == 0 || json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

func compact(raw []byte) string {
	var buf bytes.Buffer
	if len(raw) == 0 || json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
