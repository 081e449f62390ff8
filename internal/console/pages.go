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
	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/reconcile"
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
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"utcp": func(t *time.Time) string {
		if t == nil {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
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
}

func (c *Console) parse() error {
	c.pages = map[string]*template.Template{}
	for _, name := range []string{"signin", "error", "queue", "action", "search"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/rows.html", "templates/"+name+".html")
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

// row is an action as lists show it: identifiers only, no customer data.
type row struct {
	ID        uuid.UUID
	Tenant    string
	Operation string
	Queue     string // needs_operator, running, unknown or completed
	Outcome   string
	CreatedAt time.Time
	Platform  string
	CallID    string
}

func (c *Console) rows(actions []oncecall.Action, tenants map[uuid.UUID]string) []row {
	out := make([]row, len(actions))
	for i, a := range actions {
		q := string(a.State)
		if a.NeedsOperator {
			q = "needs_operator"
		}
		out[i] = row{
			ID: a.ID, Tenant: tenantName(tenants, a.TenantID), Operation: a.Operation, Queue: q,
			Outcome: string(a.Outcome), CreatedAt: a.CreatedAt, Platform: platform(a), CallID: a.CallID,
		}
	}
	return out
}

func tenantName(tenants map[uuid.UUID]string, id uuid.UUID) string {
	if n, ok := tenants[id]; ok && n != "" {
		return n
	}
	return id.String()
}

// platform is where an action's request came from.
func platform(a oncecall.Action) string {
	switch a.CallPlatform {
	case "vapi":
		return "Vapi"
	case "retell":
		return "Retell"
	case "elevenlabs":
		return "ElevenLabs"
	case "dasha":
		return "Dasha"
	}
	if strings.HasPrefix(a.Key, "derived:") {
		return "a voice platform" // a tool call without a call id
	}
	return "REST API"
}

func (c *Console) tenants(r *http.Request) ([]oncecall.Tenant, map[uuid.UUID]string, error) {
	list, err := c.cfg.Store.Tenants(r.Context())
	if err != nil {
		return nil, nil, err
	}
	names := make(map[uuid.UUID]string, len(list))
	for _, t := range list {
		names[t.ID] = t.Name
	}
	return list, names, nil
}

// queueStates are the queue's states, in the order the counts show them.
var queueStates = []string{"needs_operator", "unknown", "running"}

// ages are the age filter's choices.
var ages = []string{"1m", "5m", "15m", "1h", "24h"}

type queueData struct {
	Now       time.Time
	Filter    map[string]string
	Query     string
	Tenants   []oncecall.Tenant
	Ops       []string
	States    []string
	Ages      []string
	Counts    []count
	Total     int64
	Rows      []row
	Refresh   int64 // milliseconds
	Truncated bool
}

type count struct {
	State string
	N     int64
}

const queueLimit = 200

// queueFilter reads the queue's filters; a bad one is an error to show.
func (c *Console) queueFilter(q url.Values) (db.QueueFilter, map[string]string, error) {
	f := db.QueueFilter{Operation: q.Get("operation"), State: q.Get("state"), Limit: queueLimit + 1}
	form := map[string]string{"tenant": q.Get("tenant"), "operation": f.Operation, "state": f.State, "age": q.Get("age")}
	if v := q.Get("tenant"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, form, errors.New("the tenant filter must be a tenant id")
		}
		f.Tenant = &id
	}
	if f.Operation != "" {
		if _, ok := c.cfg.Ops.Get(f.Operation); !ok {
			return f, form, errors.New("the operation filter must be one of oncecall's operations")
		}
	}
	if f.State != "" && !slices.Contains(queueStates, f.State) {
		return f, form, errors.New("the state filter must be needs_operator, unknown or running")
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

func (c *Console) queueData(r *http.Request) (queueData, error) {
	f, form, err := c.queueFilter(r.URL.Query())
	if err != nil {
		return queueData{}, fault.New(fault.InvalidInput, "%s", err.Error())
	}
	tenants, names, err := c.tenants(r)
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
		Now: c.now(), Filter: form, Tenants: tenants, States: queueStates, Ages: ages, Refresh: c.cfg.Refresh.Milliseconds(),
	}
	for _, o := range c.cfg.Ops.All() {
		d.Ops = append(d.Ops, o.Name())
	}
	for _, s := range queueStates {
		d.Counts = append(d.Counts, count{State: s, N: counts[s]})
		d.Total += counts[s]
	}
	if len(actions) > queueLimit {
		actions, d.Truncated = actions[:queueLimit], true
	}
	d.Rows = c.rows(actions, names)
	v := url.Values{}
	for k, val := range form {
		if val != "" {
			v.Set(k, val)
		}
	}
	d.Query = v.Encode()
	return d, nil
}

func (c *Console) queuePage(w http.ResponseWriter, r *http.Request, s session) {
	d, err := c.queueData(r)
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
func (c *Console) queueRows(w http.ResponseWriter, r *http.Request, _ session) {
	d, err := c.queueData(r)
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
	View       api.OperatorAction
	Action     oncecall.Action
	Tenant     string
	Platform   string
	Tool       string
	KeyHash    string
	Derived    bool
	Envelope   string
	Request    string
	Steps      []oncecall.Step
	Events     []event
	Evidence   []event
	Resolvable bool
	Held       bool
}

type event struct {
	oncecall.Event
	Text string
}

// evidenceKinds are the timeline events in which a driver or the
// reconciler recorded what it learned about a step.
var evidenceKinds = []string{"evidence", "inconclusive", "needs_operator", "lease_expired", "nudged"}

func (c *Console) actionData(r *http.Request, id uuid.UUID) (actionData, error) {
	d, err := reconcile.Show(r.Context(), c.cfg.Store, id)
	if err != nil {
		return actionData{}, err
	}
	a := d.Action
	view := api.OperatorView(d)
	_, names, err := c.tenants(r)
	if err != nil {
		return actionData{}, err
	}
	env, _ := json.Marshal(view.Envelope)
	out := actionData{
		Now: c.now(), View: view, Action: a, Tenant: tenantName(names, a.TenantID), Platform: platform(a),
		KeyHash: idem.KeyHash(a.Key), Derived: strings.HasPrefix(a.Key, "derived:"),
		Envelope: pretty(env), Request: pretty(a.Request), Steps: d.Steps,
		Resolvable: a.State != oncecall.Completed || a.NeedsOperator,
		Held:       a.LeaseUntil != nil && a.LeaseUntil.After(c.now()),
	}
	if o, ok := c.cfg.Ops.Get(a.Operation); ok {
		out.Tool = o.Tool()
	}
	for _, e := range d.Events {
		ev := event{Event: e, Text: compact(e.Detail)}
		out.Events = append(out.Events, ev)
		if slices.Contains(evidenceKinds, e.Kind) {
			out.Evidence = append(out.Evidence, ev)
		}
	}
	return out, nil
}

func (c *Console) actionID(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		c.fail(w, r, http.StatusNotFound, "No such action: an action id looks like 0197a3b0-0000-7000-8000-000000000001.")
		return uuid.UUID{}, false
	}
	return id, true
}

func (c *Console) actionPage(w http.ResponseWriter, r *http.Request, s session) {
	id, ok := c.actionID(w, r)
	if !ok {
		return
	}
	p := page{Title: "Action " + id.String(), Session: s}
	if o := r.URL.Query().Get("resolved"); o == string(oncecall.Confirmed) || o == string(oncecall.Rejected) {
		p.Notice = "Resolved as " + o + "."
	}
	c.showAction(w, r, http.StatusOK, id, p)
}

func (c *Console) showAction(w http.ResponseWriter, r *http.Request, status int, id uuid.UUID, p page) {
	d, err := c.actionData(r, id)
	if errors.Is(err, db.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	p.Data = d
	c.render(w, r, status, "action", p)
}

// resolve applies the operator's resolution through the same function as
// POST /v1/ops/actions/{id}/resolve and answers with the API's statuses: a
// bad form 400, an action someone holds 409, an unknown one 404.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request, s session) {
	id, ok := c.actionID(w, r)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	form := map[string]string{}
	for _, k := range []string{"outcome", "provider_ref", "reason", "note"} {
		form[k] = strings.TrimSpace(r.PostForm.Get(k))
	}
	a, err := c.cfg.Resolve(r.Context(), id, reconcile.Resolution{
		Outcome: oncecall.Outcome(form["outcome"]), ProviderRef: form["provider_ref"], Reason: form["reason"],
		Note: form["note"], By: s.Name,
	})
	if err == nil {
		c.cfg.Log.Info().Str("action_id", a.ID.String()).Str("outcome", form["outcome"]).Msg("console: action resolved")
		http.Redirect(w, r, "/console/actions/"+a.ID.String()+"?resolved="+url.QueryEscape(form["outcome"]), http.StatusSeeOther)
		return
	}
	e := fault.As(err)
	if errors.Is(err, db.ErrNotFound) {
		e = fault.New(fault.NotFound, "no such action")
	}
	status := api.StatusOf(e.Code)
	switch {
	case status >= 500:
		c.internal(w, r, err)
		return
	case e.Code == fault.NotFound:
		c.fail(w, r, status, "No such action.")
		return
	}
	p := page{Title: "Action " + id.String(), Session: s, Form: form, Error: "Not resolved: " + e.Message + "."}
	if e.Code == fault.InFlight {
		p.Error = "Someone is working on it (a request, the reconciler or another operator holds the action; a step may be in flight). Look again in a moment: nothing was changed."
	}
	c.showAction(w, r, status, id, p)
}

type searchData struct {
	Now       time.Time
	Q         string
	Searched  bool
	ByID      []row
	ByKey     []row
	ByCall    []row
	Customers []customerHit
	ByCust    []row
}

type customerHit struct {
	ID     uuid.UUID
	Tenant string
	Name   string
}

// searchPage finds actions by id, idempotency key (or its logged
// key_hash), call id, or customer (id, exact phone or e-mail, part of the
// name). Results show identifiers and names only.
func (c *Console) searchPage(w http.ResponseWriter, r *http.Request, s session) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := searchData{Now: c.now(), Q: q}
	p := page{Title: "Search", Session: s, Data: &d}
	if q == "" {
		c.render(w, r, http.StatusOK, "search", p)
		return
	}
	if len(q) > 255 {
		p.Error = "Search for at most 255 characters."
		c.render(w, r, http.StatusBadRequest, "search", p)
		return
	}
	d.Searched = true
	ctx := r.Context()
	_, names, err := c.tenants(r)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	if id, err := uuid.Parse(q); err == nil {
		a, err := c.cfg.Store.ActionAnyTenant(ctx, id)
		switch {
		case err == nil:
			d.ByID = c.rows([]oncecall.Action{a}, names)
		case !errors.Is(err, db.ErrNotFound):
			c.internal(w, r, err)
			return
		}
	}
	byKey, err := c.cfg.Store.ActionsByKey(ctx, q)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	byCall, err := c.cfg.Store.ActionsByCall(ctx, q)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	customers, err := c.cfg.Store.FindCustomers(ctx, q)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d.ByKey, d.ByCall = c.rows(byKey, names), c.rows(byCall, names)
	if len(customers) > 0 {
		ids := make([]uuid.UUID, len(customers))
		for i, cu := range customers {
			ids[i] = cu.ID
			d.Customers = append(d.Customers, customerHit{ID: cu.ID, Tenant: tenantName(names, cu.TenantID), Name: cu.Name})
		}
		byCust, err := c.cfg.Store.ActionsOfCustomers(ctx, ids)
		if err != nil {
			c.internal(w, r, err)
			return
		}
		d.ByCust = c.rows(byCust, names)
	}
	c.render(w, r, http.StatusOK, "search", p)
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
