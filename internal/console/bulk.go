package console

import (
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
)

// bulkMax is the most actions one bulk run acts on; narrow the filters for
// more.
const bulkMax = 1000

// Bulk work: the queue's filters select the actions; a dry run counts
// them; the run acts on each as one resolution or retry of its own (its
// lease, its fencing, its audit entry), never on an action claimed after
// the dry run.
type bulkData struct {
	Do       string // retry or resolve
	Filter   map[string]string
	Query    template.URL
	AsOf     string // RFC 3339: only actions claimed by then
	Count    int    // the actions the run would act on
	Skipped  int    // matching actions it would not (retry: not waiting for a person)
	Capped   bool
	Rows     []row
	Now      time.Time
	Done     *bulkResult
	Resolves bool
}

type bulkResult struct {
	Acted, InFlight, Gone, Failed int
	Bulk                          string
}

func (c *Console) bulkSelect(r *http.Request, s session, do string, asOf time.Time) ([]oncecall.Action, []oncecall.Action, map[string]string, error) {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	f, form, err := c.queueFilter(q, s)
	if err != nil {
		return nil, nil, form, fault.New(fault.InvalidInput, "%s", err.Error())
	}
	f.CreatedBefore, f.Limit = asOf, bulkMax+1
	matching, err := c.cfg.Store.Queue(r.Context(), f)
	if err != nil {
		return nil, nil, form, err
	}
	var act, skip []oncecall.Action
	for _, a := range matching {
		if do == "retry" && !a.NeedsOperator {
			skip = append(skip, a)
			continue
		}
		act = append(act, a)
	}
	return act, skip, form, nil
}

func bulkVerb(v string) (string, error) {
	switch v {
	case "retry", "resolve":
		return v, nil
	}
	return "", errors.New("bulk work is retry or resolve")
}

// bulkPreview is the dry run: how many actions the filters select now,
// and the form that acts on exactly those.
func (c *Console) bulkPreview(w http.ResponseWriter, r *http.Request, s session) {
	do, err := bulkVerb(r.URL.Query().Get("do"))
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	asOf := c.now()
	act, skip, form, err := c.bulkSelect(r, s, do, asOf)
	if fault.CodeOf(err) == fault.InvalidInput {
		c.fail(w, r, http.StatusBadRequest, fault.As(err).Message)
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	ts, err := c.tenants(r, s)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d := bulkData{Do: do, Filter: form, Query: encodeFilter(form), AsOf: asOf.UTC().Format(time.RFC3339Nano), Now: c.now(),
		Count: min(len(act), bulkMax), Skipped: len(skip), Capped: len(act)+len(skip) > bulkMax, Resolves: do == "resolve"}
	d.Rows = c.rows(r, act[:min(len(act), 50)], ts)
	c.render(w, r, http.StatusOK, "bulk", page{Title: "Bulk " + do, Session: s, Data: d, Form: map[string]string{}})
}

// bulkApply acts on the actions the dry run counted (the same filters,
// claimed by its time), each as its own resolution or retry.
func (c *Console) bulkApply(w http.ResponseWriter, r *http.Request, s session) {
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	do, err := bulkVerb(r.PostForm.Get("do"))
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	asOf, err := time.Parse(time.RFC3339Nano, r.PostForm.Get("as_of"))
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "The dry run's time is missing: count the actions again.")
		return
	}
	expected, err := strconv.Atoi(r.PostForm.Get("count"))
	if err != nil || expected < 0 {
		c.fail(w, r, http.StatusBadRequest, "The dry run's count is missing: count the actions again.")
		return
	}
	form := map[string]string{}
	for _, k := range []string{"reason", "note"} {
		form[k] = strings.TrimSpace(r.PostForm.Get(k))
	}
	act, skip, filter, err := c.bulkSelect(r, s, do, asOf)
	if fault.CodeOf(err) == fault.InvalidInput {
		c.fail(w, r, http.StatusBadRequest, fault.As(err).Message)
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	act = act[:min(len(act), bulkMax)]
	ts, err := c.tenants(r, s)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d := bulkData{Do: do, Filter: filter, Query: encodeFilter(filter), AsOf: asOf.UTC().Format(time.RFC3339Nano), Now: c.now(),
		Count: len(act), Skipped: len(skip), Resolves: do == "resolve"}
	p := page{Title: "Bulk " + do, Session: s, Data: &d, Form: form}
	if do == "resolve" && form["note"] == "" {
		d.Rows = c.rows(r, act[:min(len(act), 50)], ts)
		p.Error = "Not resolved: note is required: record the evidence."
		c.render(w, r, http.StatusBadRequest, "bulk", p)
		return
	}
	if len(act) > expected {
		// More match than the dry run counted (a filter changed meaning):
		// nothing is done without a new count.
		d.Rows = c.rows(r, act[:min(len(act), 50)], ts)
		p.Error = "More actions match than the dry run counted: nothing was done. Check the new count."
		c.render(w, r, http.StatusConflict, "bulk", p)
		return
	}
	res := &bulkResult{Bulk: uuid.NewString()}
	for _, a := range act {
		var err error
		if do == "retry" {
			_, err = c.cfg.Operator.Retry(r.Context(), a.ID, s.Actor, res.Bulk)
		} else {
			_, err = c.cfg.Operator.Resolve(r.Context(), a.ID, oncecall.Resolution{
				Outcome: oncecall.Rejected, Reason: form["reason"], Note: form["note"], Actor: s.Actor, Bulk: res.Bulk,
			})
		}
		switch {
		case err == nil:
			res.Acted++
		case fault.CodeOf(err) == fault.InFlight:
			res.InFlight++
		case errors.Is(err, db.ErrNotFound) || fault.CodeOf(err) == fault.InvalidInput:
			res.Gone++ // settled or pruned since the dry run
		default:
			res.Failed++
			c.cfg.Log.Error().Err(err).Str("action_id", a.ID.String()).Msg("console: bulk " + do)
		}
	}
	kind := "bulk_retried"
	if do == "resolve" {
		kind = "bulk_resolved"
	}
	if err := c.cfg.Store.AddAudit(r.Context(), oncecall.AuditEntry{Actor: s.Actor, TenantID: s.TenantID, Kind: kind},
		map[string]any{"bulk": res.Bulk, "counted": expected, "acted": res.Acted, "in_flight": res.InFlight, "gone": res.Gone,
			"failed": res.Failed, "filter": string(encodeFilter(filter))}); err != nil {
		c.internal(w, r, err)
		return
	}
	c.cfg.Log.Info().Str("bulk", res.Bulk).Int("acted", res.Acted).Int("in_flight", res.InFlight).Str("via", s.Actor.Via).Msg("console: bulk " + do)
	d.Done = res
	p.Notice = "Done."
	c.render(w, r, http.StatusOK, "bulk", p)
}
