package console

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/phone"
	"github.com/oncecall/oncecall/internal/schedule"
)

// A task is a call someone at the business owes a caller: one whose
// action waits for a person (the caller was told a person would follow
// up), or one who asked to be called back (request_callback).
type task struct {
	Kind     string // action or callback
	ID       uuid.UUID
	Tenant   string
	Call     person // whom to call
	About    string
	When     string // the window the caller chose, for a callback
	Since    time.Time
	Clock    schedule.Clock
	ActionID uuid.UUID
	Done     *db.FollowUp
}

// Who says who should call whom.
func (t task) Who() string {
	return "Someone at " + t.Tenant + " calls " + t.Call.Name
}

type tasksData struct {
	Open []task
	Done []task
	Now  time.Time
	Can  bool
}

// doneSince is how far back the tasks page lists what was done.
const doneSince = 7 * 24 * time.Hour

func (c *Console) tasksPage(w http.ResponseWriter, r *http.Request, s session) {
	ctx := r.Context()
	ts, err := c.tenants(r, s)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	tenantIDs := []uuid.UUID{s.TenantID}
	if !s.Scoped() {
		if tenantIDs, err = c.cfg.Store.TenantIDs(ctx); err != nil {
			c.internal(w, r, err)
			return
		}
	}
	waiting, err := c.owed(r, s)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	callbacks, err := c.cfg.Store.OpenCallbacks(ctx, tenantIDs, doneSince)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	ids := make([]uuid.UUID, 0, len(waiting))
	for _, a := range waiting {
		ids = append(ids, a.ID)
	}
	done, err := c.cfg.Store.FollowUpsDone(ctx, tenantIDs, ids)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d := tasksData{Now: c.now(), Can: s.Can("resolver")}
	for _, a := range waiting {
		if _, ok := done[a.ID]; ok {
			continue
		}
		tk, err := c.actionTask(r, a, ts.of(a.TenantID))
		if err != nil {
			c.internal(w, r, err)
			return
		}
		d.Open = append(d.Open, tk)
	}
	for _, cb := range callbacks {
		t := ts.of(cb.TenantID)
		cc, _ := schedule.NewClock(cb.Timezone, string(t.Clock.Locale))
		d.Open = append(d.Open, task{
			Kind: "callback", ID: cb.ID, Tenant: t.Name, Since: cb.WindowStart, Clock: t.Clock, ActionID: cb.ActionID,
			Call: person{Name: cmpOr(cb.CustomerName, phone.Display(cmpOr(cb.Phone, cb.CustomerPhone), t.Region)),
				Phone: cmpOr(cb.Phone, cb.CustomerPhone), Region: t.Region},
			About: cmpOr(cb.Reason, "a callback the caller asked for"), When: cc.Window(cb.WindowStart, cb.WindowEnd, d.Now) + " (" + cc.Zone + ")",
		})
	}
	recent, err := c.cfg.Store.RecentFollowUpsDone(ctx, tenantIDs, doneSince)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	for _, f := range recent {
		t := ts.of(f.TenantID)
		f := f
		d.Done = append(d.Done, task{Kind: f.Kind, ID: f.SubjectID, Tenant: t.Name, Clock: t.Clock, Done: &f, About: f.Note})
	}
	p := page{Title: "Follow-up calls", Session: s, Data: d}
	switch r.URL.Query().Get("done") {
	case "1":
		p.Notice = "Marked done, with your name."
	case "0":
		p.Notice = "Someone had marked it done already."
	}
	c.render(w, r, http.StatusOK, "tasks", p)
}

// owed are the actions whose callers are owed a call: those waiting for a
// person, and those resolved in the last week (their callers heard "not
// confirmed, someone will follow up" and are owed the answer now known).
func (c *Console) owed(r *http.Request, s session) ([]oncecall.Action, error) {
	ctx := r.Context()
	f := db.QueueFilter{State: "needs_operator", Limit: queueLimit}
	if s.Scoped() {
		f.Tenant = &s.TenantID
	}
	waiting, err := c.cfg.Store.Queue(ctx, f)
	if err != nil {
		return nil, err
	}
	resolved, err := c.cfg.Store.Audit(ctx, db.AuditFilter{TenantID: s.TenantID, Kind: "resolved", Since: c.now().Add(-doneSince), Limit: queueLimit})
	if err != nil {
		return nil, err
	}
	seen := map[uuid.UUID]bool{}
	for _, a := range waiting {
		seen[a.ID] = true
	}
	for _, e := range resolved {
		if seen[e.ActionID] || e.ActionID == uuid.Nil {
			continue
		}
		seen[e.ActionID] = true
		a, err := c.cfg.Store.ActionAnyTenant(ctx, e.ActionID)
		if errors.Is(err, db.ErrNotFound) {
			continue // pruned
		}
		if err != nil {
			return nil, err
		}
		waiting = append(waiting, a)
	}
	return waiting, nil
}

// actionTask is the call owed to the caller of an action that waited for
// a person: whom to call, and what changed since they were told.
func (c *Console) actionTask(r *http.Request, a oncecall.Action, t tenantInfo) (task, error) {
	in := request(a)
	tk := task{Kind: "action", ID: a.ID, Tenant: t.Name, Since: a.CreatedAt, Clock: t.Clock, ActionID: a.ID}
	tr, err := c.heardOf(r, a, t, in)
	if err != nil {
		return tk, err
	}
	tk.About = c.operationWords(a.Operation) + ": " + changedSince(tr, t.Clock)
	cid, err := c.customerOf(r, a, in)
	if err != nil {
		return tk, err
	}
	if cu, err := c.cfg.Store.CustomerByID(r.Context(), a.TenantID, cid); err == nil {
		tk.Call = person{Name: cmpOr(cu.Name, "the customer"), Phone: cu.Phone, Email: cu.Email, Region: t.Region}
	} else {
		tk.Call = person{Name: "the caller", Phone: cmpOr(in["phone"], in["to"]), Region: t.Region}
	}
	return tk, nil
}

// changedSince says what changed since the caller was told: "they were
// told not confirmed yet (Vapi, Thu 3 Dec 2026, 10:30:00 GMT); now
// confirmed: tell them".
func changedSince(tr truth, clock schedule.Clock) string {
	told := "they were told someone would follow up"
	if n := len(tr.Heard); n > 0 {
		last := tr.Heard[n-1]
		told = "they were told " + tr.Told + " (" + last.From + ", " + local(last.At, clock) + ")"
	}
	switch tr.Now {
	case "not known yet":
		return told + "; still not settled"
	case "":
		return told
	}
	return told + "; now " + tr.Now + ": tell them"
}

// taskDone marks a follow-up call done by the signed-in person, with what
// came of it.
func (c *Console) taskDone(w http.ResponseWriter, r *http.Request, s session) {
	kind := r.PathValue("kind")
	if kind != "action" && kind != "callback" {
		c.fail(w, r, http.StatusNotFound, "No such task.")
		return
	}
	id, ok := c.pathID(w, r, "task")
	if !ok {
		return
	}
	note := strings.TrimSpace(r.PostFormValue("note"))
	if note == "" || utf8.RuneCountInString(note) > 2000 || !utf8.ValidString(note) {
		c.fail(w, r, http.StatusBadRequest, "Say what came of the call (1 to 2000 characters): it is recorded with your name.")
		return
	}
	var tenant uuid.UUID
	switch kind {
	case "action":
		a, err := c.cfg.Store.ActionAnyTenant(r.Context(), id)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			c.internal(w, r, err)
			return
		}
		tenant = a.TenantID
	case "callback":
		t, err := c.callbackTenant(r, s, id)
		if err != nil {
			c.internal(w, r, err)
			return
		}
		tenant = t
	}
	if tenant == uuid.Nil || !s.sees(tenant) {
		c.fail(w, r, http.StatusNotFound, "No such task.")
		return
	}
	done, err := c.cfg.Store.MarkFollowUpDone(r.Context(), db.FollowUp{TenantID: tenant, Kind: kind, SubjectID: id, Actor: s.Actor, Note: note})
	if err != nil {
		c.internal(w, r, err)
		return
	}
	flag := "0"
	if done {
		flag = "1"
	}
	http.Redirect(w, r, "/console/tasks?done="+flag, http.StatusSeeOther)
}

// callbackTenant is the tenant of a callback the person sees; uuid.Nil
// when there is none.
func (c *Console) callbackTenant(r *http.Request, s session, id uuid.UUID) (uuid.UUID, error) {
	t, err := c.cfg.Store.CallbackTenant(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) || (err == nil && !s.sees(t)) {
		return uuid.Nil, nil
	}
	return t, err
}
