package console

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
)

// auditRow is an audit entry as the pages show it.
type auditRow struct {
	ID       int64
	At       time.Time
	Clock    schedule.Clock
	Who      string // "Ana Ruiz", "Bo (break-glass)"
	Via      string
	Tenant   string
	ActionID uuid.UUID
	What     string
	Detail   string // in words
	Raw      string // the detail object as recorded, for the export
}

// auditKinds say what each kind of entry records.
var auditKinds = map[string]string{
	"resolved":        "resolved an action",
	"retried":         "gave an action back to the reconciler",
	"noted":           "noted on an action",
	"follow_up_done":  "marked a follow-up call done",
	"signed_in":       "signed in",
	"signed_out":      "signed out",
	"sessions_ended":  "ended someone's sessions",
	"person_disabled": "disabled someone",
	"person_added":    "added someone to the staff",
	"link_made":       "made a sign-in link",
	"bulk_resolved":   "resolved actions in bulk",
	"bulk_retried":    "retried actions in bulk",
}

// viaWords say how someone acted.
var viaWords = map[string]string{
	oncecall.ViaPassword: "password", oncecall.ViaLink: "sign-in link", oncecall.ViaOIDC: "identity provider",
	oncecall.ViaBreakGlass: "break-glass (operator token)", oncecall.ViaAPI: "operator API (operator token)",
	oncecall.ViaCommand: "command line",
}

func who(a oncecall.Actor) string {
	if a.Via == oncecall.ViaBreakGlass || a.Via == oncecall.ViaAPI || a.Via == oncecall.ViaCommand {
		if a.Name == viaWords[a.Via] {
			return a.Name // "command line", not "command line (command line)"
		}
		return a.Name + " (" + viaWords[a.Via] + ")"
	}
	return a.Name
}

func auditRows(entries []oncecall.AuditEntry, ts tenants) []auditRow {
	out := make([]auditRow, len(entries))
	for i, e := range entries {
		t := ts.of(e.TenantID)
		out[i] = auditRow{
			ID: e.ID, At: e.At, Clock: t.Clock, Who: who(e.Actor), Via: cmpOr(viaWords[e.Actor.Via], e.Actor.Via),
			Tenant: t.Name, ActionID: e.ActionID, What: cmpOr(auditKinds[e.Kind], e.Kind), Detail: detailWords(e.Detail), Raw: compact(e.Detail),
		}
		if e.TenantID == uuid.Nil {
			out[i].Tenant = ""
		}
	}
	return out
}

// detailWords lays a detail object out as "outcome: confirmed · note: ...".
func detailWords(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	order := []string{"outcome", "provider_ref", "reason", "person", "role", "note"}
	sort.Slice(keys, func(i, j int) bool {
		a, b := slices.Index(order, keys[i]), slices.Index(order, keys[j])
		if a < 0 {
			a = len(order)
		}
		if b < 0 {
			b = len(order)
		}
		return a < b || (a == b && keys[i] < keys[j])
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := m[k]
		var s string
		switch x := v.(type) {
		case string:
			s = x
			switch k {
			case "callback_id":
				continue // the task says whom; the id stays in the export
			case "bulk":
				s = "run " + x[:min(len(x), 8)] // enough to tell one run's entries apart
			}
		default:
			b, _ := json.Marshal(x)
			s = string(b)
		}
		parts = append(parts, strings.ReplaceAll(k, "_", " ")+": "+s)
	}
	return strings.Join(parts, " · ")
}

type auditData struct {
	Rows    []auditRow
	Filter  map[string]string
	Query   template.URL
	Tenants []tenantInfo
	Scoped  bool
	Kinds   []string
	More    int64 // the id to page back from; 0 when this is the last page
}

const auditPageSize = 100

// auditFilter reads the audit page's filters: tenant, person (as named),
// kind, action, and from/to dates (YYYY-MM-DD, on the console's clock, or
// the person's tenant's).
func (c *Console) auditFilter(q url.Values, s session, ts tenants) (db.AuditFilter, map[string]string, error) {
	form := map[string]string{}
	for _, k := range []string{"tenant", "person", "kind", "action", "from", "to"} {
		form[k] = strings.TrimSpace(q.Get(k))
	}
	f := db.AuditFilter{OperatorName: form["person"], Kind: form["kind"]}
	if v := form["tenant"]; v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, form, errors.New("the tenant filter must be a tenant id")
		}
		f.TenantID = id
	}
	if s.Scoped() {
		if f.TenantID != uuid.Nil && f.TenantID != s.TenantID {
			return f, form, errors.New("the tenant filter must be your tenant")
		}
		f.TenantID, form["tenant"] = s.TenantID, s.TenantID.String()
	}
	if v := form["action"]; v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, form, errors.New("the action filter must be an action id")
		}
		f.ActionID = id
	}
	if f.Kind != "" {
		if _, ok := auditKinds[f.Kind]; !ok {
			return f, form, errors.New("the kind filter must be one of the kinds listed")
		}
	}
	if len(f.OperatorName) > 64 {
		return f, form, errors.New("the person filter must be at most 64 characters")
	}
	for _, k := range []string{"from", "to"} {
		if form[k] == "" {
			continue
		}
		d, err := time.ParseInLocation("2006-01-02", form[k], ts.clock.Loc)
		if err != nil {
			return f, form, errors.New("the " + k + " filter must be a date such as 2026-03-12")
		}
		if k == "from" {
			f.Since = d
		} else {
			f.Until = d.AddDate(0, 0, 1)
		}
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return f, form, errors.New("the page must be a number")
		}
		f.BeforeID = n
	}
	return f, form, nil
}

func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s session) {
	ts, err := c.tenants(r, s)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	f, form, err := c.auditFilter(r.URL.Query(), s, ts)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.Limit = auditPageSize + 1
	entries, err := c.cfg.Store.Audit(r.Context(), f)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d := auditData{Filter: form, Query: encodeFilter(form), Tenants: ts.List, Scoped: s.Scoped()}
	if len(entries) > auditPageSize {
		entries = entries[:auditPageSize]
		d.More = entries[len(entries)-1].ID
	}
	for k := range auditKinds {
		d.Kinds = append(d.Kinds, k)
	}
	slices.Sort(d.Kinds)
	d.Rows = auditRows(entries, ts)
	c.render(w, r, http.StatusOK, "audit", page{Title: "Audit", Session: s, Data: d})
}

// auditCSVLimit bounds one export; narrow the dates for more.
const auditCSVLimit = 50000

// auditCSV exports the audit trail under the page's filters as CSV, times
// in RFC 3339 with their offset on the tenant's clock.
func (c *Console) auditCSV(w http.ResponseWriter, r *http.Request, s session) {
	ts, err := c.tenants(r, s)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	f, _, err := c.auditFilter(r.URL.Query(), s, ts)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.Limit = auditCSVLimit
	entries, err := c.cfg.Store.Audit(r.Context(), f)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="oncecall-audit.csv"`)
	cw := csv.NewWriter(w)
	cw.Write([]string{"at", "person", "via", "tenant", "action_id", "what", "detail"}) //nolint:errcheck // flushed below
	for _, e := range auditRows(entries, ts) {
		action := ""
		if e.ActionID != uuid.Nil {
			action = e.ActionID.String()
		}
		cw.Write([]string{ //nolint:errcheck // flushed below
			e.At.In(e.Clock.Loc).Format(time.RFC3339), cell(e.Who), e.Via, cell(e.Tenant), action, e.What, cell(e.Raw),
		})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		c.cfg.Log.Warn().Err(err).Msg("console: audit export")
	}
}

// cell keeps a spreadsheet from reading a value as a formula.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
