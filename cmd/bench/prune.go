package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/internal/prune"
)

// The prune scenario is first while a prune runs: what serve's pruner
// finds every --prune-interval at a steady 10 million actions a day is
// --prune-backlog actions past the action retention to delete and as many
// bodies past the response retention to clear. Before each run, outside
// the measured window, a tenant of its own gets that backlog with fast SQL
// (preloadAged): the actions completed 31 days ago and compact (their
// bodies cleared at 24 hours, as a prune leaves them), the bodies' actions
// completed 2 days ago, each spread over a prune interval. Nothing else in
// the database is old enough to be pruned (preload keeps the other
// fixtures younger than a day), which is checked before the run: if
// anything else is due, the run is skipped rather than prune it.
//
// The run books as first does (fresh keys, fresh slots, the same effect
// count after it) on another tenant, while a prune.Pruner with its
// defaults (those of serve: 24 h, 720 h, batches of 1000, a tenth of its
// time in statements) runs on the bench's store from the moment the
// measured window opens until it ends: the prune is stopped there, as the
// backlog takes it longer than a window at its duty. The run's p99 is the
// window's; prune/first p99 holds it against first's at the same
// concurrency in the same round. Keeping up is the prune's rate (rows
// deleted and cleared over the time it ran) against the backlog's rows
// over serve's interval. After it, the pruner's counts must be at most the
// backlog's, and every action outside the backlog must still be there with
// its body: a prune that took anything else fails the bench. What remains
// of the backlog is then deleted, so that the runs after it find the table
// as first leaves it.
//
// The pruner runs in the bench process on the bench's pool: in serve it
// holds one of the server's connections while it runs.

// pruneInterval is serve's default --prune-interval: a backlog is what
// one prune run finds, and keeping up is taking it within the interval.
const pruneInterval = 10 * time.Minute

// defaultPruneBacklog is what one pruneInterval brings at 10 million
// actions a day: 69,444.
const defaultPruneBacklog = 10_000_000 * int(pruneInterval/time.Minute) / (24 * 60)

// The ages of the backlog's newest actions: a day past the action
// retention, and a day past the response retention.
const (
	backlogActionAge = 31 * 24 * time.Hour
	backlogBodyAge   = 48 * time.Hour
)

// pruneP99Target is the most prune's p99 may be, as a multiple of first's.
const pruneP99Target = 1.2

// pruneFigures is what a prune run measured of its prune besides the
// bookings' rate and latency (the run's stats).
type pruneFigures struct {
	// Backlog is how many actions past the action retention, and how
	// many bodies past the response retention, the run began with.
	Backlog int `json:"backlog"`
	// ActionsDeleted and BodiesCleared are the pruner's counts, Batches
	// its statements.
	ActionsDeleted int64 `json:"actions_deleted"`
	BodiesCleared  int64 `json:"bodies_cleared"`
	Batches        int   `json:"batches"`
	// ActionsLeft and BodiesLeft are the backlog's actions and bodies
	// still due after the prune.
	ActionsLeft int64 `json:"actions_left"`
	BodiesLeft  int64 `json:"bodies_left"`
	// Seconds is how long the prune ran, from the window's opening to
	// its end or the window's; BusyShare the share of it spent in
	// statements (prune.Config.Duty).
	Seconds   float64 `json:"seconds"`
	BusyShare float64 `json:"busy_share"`
	// RowsPerSecond is the rows pruned (actions deleted and bodies
	// cleared) a second; NeededRowsPerSecond is the backlog's rows over
	// pruneInterval, the rate that keeps up.
	RowsPerSecond       float64 `json:"rows_per_second"`
	NeededRowsPerSecond float64 `json:"needed_rows_per_second"`
	// WindowShare is the share of the measured window the prune ran in: 1
	// when it outlasted the window.
	WindowShare float64 `json:"window_share"`
}

func (p *pruneFigures) line() string {
	return fmt.Sprintf("backlog %d actions and %d bodies: %d actions deleted, %d bodies cleared (%d batches) in %.2f s (%.0f%% in statements), "+
		"%.0f rows/s against %.0f to keep up, during %.0f%% of the window; left %d actions, %d bodies",
		p.Backlog, p.Backlog, p.ActionsDeleted, p.BodiesCleared, p.Batches, p.Seconds, 100*p.BusyShare,
		p.RowsPerSecond, p.NeededRowsPerSecond, 100*p.WindowShare, p.ActionsLeft, p.BodiesLeft)
}

func (b *bench) runPrune(ctx context.Context, c int) (result, error) {
	f, err := b.bookingFixture(ctx, b.tenantName("prune", c))
	if err != nil {
		return result{}, err
	}
	backlog, err := b.newTenant(ctx, b.tenantName("prune-backlog", c))
	if err != nil {
		return result{}, err
	}
	defer func() {
		// What the prune left of the backlog goes, so that the runs after
		// this one find the table as first leaves it.
		if _, err := b.pool.Exec(context.WithoutCancel(ctx), "DELETE FROM actions WHERE tenant_id = $1", backlog.tenant); err != nil {
			b.logf("  remove what is left of prune's backlog: %v", err)
		}
	}()
	n := b.cfg.pruneBacklog
	step := pruneInterval / time.Duration(n)
	tag := backlog.tenant.String()
	if err := b.preloadAged(ctx, backlog.tenant, tag+":actions", n, aged{newest: backlogActionAge, step: step}); err != nil {
		return result{}, fmt.Errorf("the backlog's actions: %w", err)
	}
	if err := b.preloadAged(ctx, backlog.tenant, tag+":bodies", n, aged{newest: backlogBodyAge, step: step, bodies: true}); err != nil {
		return result{}, fmt.Errorf("the backlog's bodies: %w", err)
	}
	// Statistics that know of the old rows, as a table pruned every
	// interval has.
	if _, err := b.pool.Exec(ctx, "ANALYZE actions"); err != nil {
		return result{}, fmt.Errorf("analyze after the backlog: %w", err)
	}

	pruner := prune.New(b.store, prune.Config{Log: zerolog.Nop()})
	now, err := b.store.Now(ctx)
	if err != nil {
		return result{}, err
	}
	due, err := pruner.DryRun(ctx, now)
	if err != nil {
		return result{}, err
	}
	if due.Actions != int64(n) || due.Responses != int64(n) {
		return result{skipped: true, note: fmt.Sprintf("not run: %d actions and %d bodies are due for pruning, not the backlog's %d of each: "+
			"something else in the database is past a retention, and a prune would take it", due.Actions, due.Responses, n)}, nil
	}
	others := []uuid.UUID{backlog.tenant, f.tenant}
	outsideBefore, err := b.actionsBut(ctx, others)
	if err != nil {
		return result{}, err
	}

	var (
		counts              prune.Counts
		runErr              error
		ran                 bool
		windowFrom, stopped time.Time
	)
	b.alongside = func(ctx context.Context) {
		ran, windowFrom = true, time.Now()
		at, err := b.store.Now(ctx)
		if err == nil {
			counts, err = pruner.Run(ctx, at)
		}
		runErr, stopped = err, time.Now()
	}
	r, err := b.httpBookings(ctx, "prune", c, f, b.base+"/v1/appointments", nil, true)
	if err != nil {
		return result{}, err
	}
	if !ran {
		return result{}, fmt.Errorf("the prune did not start")
	}
	// The window's end stops the prune (its context); anything else
	// stopping it is an error.
	if runErr != nil && !(errors.Is(runErr, context.Canceled) && ctx.Err() == nil) {
		return result{}, fmt.Errorf("the prune during the load: %w", runErr)
	}

	p := &pruneFigures{
		Backlog: n, ActionsDeleted: counts.Actions, BodiesCleared: counts.Responses, Batches: counts.Batches,
		Seconds:             round(stopped.Sub(windowFrom).Seconds(), 3),
		NeededRowsPerSecond: round(float64(2*n)/pruneInterval.Seconds(), 1),
	}
	if d := stopped.Sub(windowFrom).Seconds(); d > 0 {
		p.RowsPerSecond = round(float64(counts.Actions+counts.Responses)/d, 1)
		p.BusyShare = round(counts.Busy.Seconds()/d, 3)
	}
	if r.elapsed > 0 {
		p.WindowShare = round(min(stopped.Sub(windowFrom).Seconds()/r.elapsed.Seconds(), 1), 3)
	}
	left, err := b.actionsOf(ctx, backlog.tenant, now)
	if err != nil {
		return result{}, err
	}
	p.ActionsLeft, p.BodiesLeft = left.old, left.bodies
	r.prune = p

	// Nothing but the backlog may have gone: every other action is still
	// there with its body, the run's own included (finish counted an
	// appointment whose action went as one without an action).
	var bad []string
	if counts.Actions > int64(n) || counts.Responses > int64(n) {
		bad = append(bad, fmt.Sprintf("the prune deleted %d actions and cleared %d bodies, more than the backlog's %d of each",
			counts.Actions, counts.Responses, n))
	}
	outsideAfter, err := b.actionsBut(ctx, others)
	if err != nil {
		return result{}, err
	}
	if outsideAfter != outsideBefore {
		bad = append(bad, fmt.Sprintf("the other tenants' actions went from %d (%d with a body) to %d (%d with a body)",
			outsideBefore.all, outsideBefore.bodies, outsideAfter.all, outsideAfter.bodies))
	}
	own, err := b.actionsOf(ctx, f.tenant, now)
	if err != nil {
		return result{}, err
	}
	if own.cleared > 0 {
		bad = append(bad, fmt.Sprintf("%d of the run's own completed actions lost their body", own.cleared))
	}
	if len(bad) > 0 {
		b.violations = append(b.violations, fmt.Sprintf("prune at %d clients: %s", c, strings.Join(bad, "; ")))
		b.logf("  PRUNED WHAT IT SHOULD NOT: %s", strings.Join(bad, "; "))
	}
	var notes []string
	if r.note != "" {
		notes = append(notes, r.note)
	}
	if taken, gone := counts.Actions+counts.Responses, int64(2*n)-left.old-left.bodies; taken < gone {
		notes = append(notes, fmt.Sprintf("the prune took %d of the backlog's rows, someone else %d more", taken, gone-taken))
	}
	r.note = strings.Join(notes, "; ")
	b.logf("  prune at %d clients: %s", c, p.line())
	return r, nil
}

// actionCount is a count of actions: all of them and those with a body.
type actionCount struct{ all, bodies int64 }

// actionsBut counts the actions of every tenant but those given.
func (b *bench) actionsBut(ctx context.Context, tenants []uuid.UUID) (actionCount, error) {
	var n actionCount
	err := b.pool.QueryRow(ctx, `SELECT count(*), count(result) FROM actions WHERE tenant_id <> ALL($1)`, tenants).Scan(&n.all, &n.bodies)
	if err != nil {
		return actionCount{}, fmt.Errorf("count actions: %w", err)
	}
	return n, nil
}

// tenantActions is what a tenant's actions are as to the retentions at
// some time: old are past the action retention, bodies past the response
// retention with their body still there, cleared completed without one.
type tenantActions struct{ old, bodies, cleared int64 }

func (b *bench) actionsOf(ctx context.Context, tenant uuid.UUID, now time.Time) (tenantActions, error) {
	var n tenantActions
	err := b.pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE completed_at < $2::timestamptz - interval '720 hours'),
       count(*) FILTER (WHERE completed_at < $2::timestamptz - interval '24 hours' AND result IS NOT NULL),
       count(*) FILTER (WHERE result IS NULL)
FROM actions WHERE tenant_id = $1 AND state = 'completed'`, tenant, now).Scan(&n.old, &n.bodies, &n.cleared)
	if err != nil {
		return tenantActions{}, fmt.Errorf("count actions: %w", err)
	}
	return n, nil
}

// pruneMedians is the median of a prune summary's rounds' figures (nil
// when none ran).
func pruneMedians(s summary) *pruneFigures {
	var fig []pruneFigures
	for _, r := range s.rounds {
		if r.prune != nil {
			fig = append(fig, *r.prune)
		}
	}
	if len(fig) == 0 {
		return nil
	}
	med := func(get func(pruneFigures) float64) float64 { return medianBy(fig, get) }
	return &pruneFigures{
		Backlog:             int(med(func(f pruneFigures) float64 { return float64(f.Backlog) })),
		ActionsDeleted:      int64(med(func(f pruneFigures) float64 { return float64(f.ActionsDeleted) })),
		BodiesCleared:       int64(med(func(f pruneFigures) float64 { return float64(f.BodiesCleared) })),
		Batches:             int(med(func(f pruneFigures) float64 { return float64(f.Batches) })),
		ActionsLeft:         int64(med(func(f pruneFigures) float64 { return float64(f.ActionsLeft) })),
		BodiesLeft:          int64(med(func(f pruneFigures) float64 { return float64(f.BodiesLeft) })),
		Seconds:             round(med(func(f pruneFigures) float64 { return f.Seconds }), 3),
		RowsPerSecond:       round(med(func(f pruneFigures) float64 { return f.RowsPerSecond }), 1),
		NeededRowsPerSecond: round(med(func(f pruneFigures) float64 { return f.NeededRowsPerSecond }), 1),
		WindowShare:         round(med(func(f pruneFigures) float64 { return f.WindowShare }), 3),
		BusyShare:           round(med(func(f pruneFigures) float64 { return f.BusyShare }), 3),
	}
}

// reportPrune prints the prune runs' figures, the median of the rounds' at
// each concurrency, beside first's p99.
func (b *bench) reportPrune(sums []summary, figures map[string]map[int]*ratioFigures) {
	var rows []summary
	firstP99 := map[int]time.Duration{}
	for _, s := range sums {
		switch {
		case s.skipped:
		case s.name == "prune":
			rows = append(rows, s)
		case s.name == "first":
			firstP99[s.concurrency] = s.p99
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(b.stdout)
	fmt.Fprintf(b.stdout, "prune: first's bookings while one prune takes a backlog of actions past the action retention (deleted) and as many bodies past the response retention (cleared), the median of the rounds';\n")
	fmt.Fprintf(b.stdout, "the prune runs with serve's defaults (a tenth of its time in statements: busy %%) from the window's opening to its end or the prune's; rows/s: both kinds a second while it ran;\n")
	fmt.Fprintf(b.stdout, "needed: the backlog within serve's %.0f-minute --prune-interval; window %%: the share of the measured window the prune ran in;\n", pruneInterval.Minutes())
	fmt.Fprintf(b.stdout, "prune/first p99: computed within each round, then the median (target <= %.2f)\n", pruneP99Target)
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tbacklog each\tactions deleted\tbodies cleared\tleft\tbatches\tprune s\tbusy %\trows/s\tneeded rows/s\twindow %\tfirst p99 ms\tprune p99 ms\tprune/first p99\t")
	for _, s := range rows {
		p := pruneMedians(s)
		if p == nil {
			continue
		}
		first := "-"
		if d, ok := firstP99[s.concurrency]; ok {
			first = fmt.Sprintf("%.2f", ms(d))
		}
		ratio := "-"
		if f := figures["prune/first"][s.concurrency]; f != nil && f.value > 0 {
			ratio = fmt.Sprintf("%.3f %s", f.value, verdict(f.value <= pruneP99Target))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.0f\t%.0f %s\t%.0f\t%.0f\t%s\t%.2f\t%s\t\n", s.concurrency,
			p.Backlog, p.ActionsDeleted, p.BodiesCleared, p.ActionsLeft+p.BodiesLeft, p.Batches, p.Seconds, 100*p.BusyShare,
			p.RowsPerSecond, verdict(p.RowsPerSecond >= p.NeededRowsPerSecond), p.NeededRowsPerSecond,
			100*p.WindowShare, first, ms(s.p99), ratio)
	}
	tw.Flush()
}
