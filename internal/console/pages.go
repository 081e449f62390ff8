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
	"github.com/oncecall/oncecall/internal/phone"
	"github.com/oncecall/oncecall/internal/schedule"
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
	// state says a queue state or a step's state as the front desk
	// says it; the internal name stays in the page's classes and filters.
	"state": func(st string) string { return cmpOr(stateWords[st], st) },
	// plural is n with its noun: "1 action", "2 actions".
	"plural": func(n int64, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	},
	"seconds": func(ms int64) string { return fmt.Sprintf("%g", float64(ms)/1000) },
	"next":    nextCheck,
}

// nextCheck says when a step is looked at next, never a time past as
// "next": a settled step is not checked again, one of an action waiting
// for a person waits for them, one whose time has come is due now.
func nextCheck(st oncecall.Step, needsPerson bool, now time.Time, c schedule.Clock) string {
	switch {
	case st.State != oncecall.StepUnknown && st.State != oncecall.StepPending:
		return "–"
	case needsPerson:
		return "none: it waits for a person"
	case !st.NextCheckAt.After(now):
		return "due now"
	}
	return local(st.NextCheckAt, c)
}

// stateWords say the states of actions and steps as people say them.
var stateWords = map[string]string{
	"needs_operator": "needs a person", "unknown": "outcome not known", "running": "being worked on",
	"completed": "settled", "pending": "not sent yet", "sent": "sent", "succeeded": "done", "failed": "failed",
	"confirmed": "confirmed", "rejected": "not done",
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
	// Region is the tenant's country, its timezone's: phone numbers are
	// read and shown as people there write them.
	Region string
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
		info := tenantInfo{ID: t.ID, Name: t.Name, Clock: t.Clock, Region: phone.Region(t.Clock.Zone)}
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
	Ops       []choice
	States    []string
	Ages      []string
	Providers []choice
	Counts    []count
	Total     int64
	Rows      []row
	Refresh   int64 // milliseconds
	Truncated bool
	CanBulk   bool
}

// choice is an option of a filter: its value, and what people read.
type choice struct{ Value, Label string }

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
		Refresh: c.cfg.Refresh.Milliseconds(), CanBulk: s.Can("resolver"),
	}
	for _, o := range c.cfg.Ops.All() {
		d.Ops = append(d.Ops, choice{o.Name(), cmpOr(o.Label(), o.Name())})
	}
	for _, k := range providerKinds {
		d.Providers = append(d.Providers, choice{k, cmpOr(providerNames[k], "a provider service (http)")})
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
