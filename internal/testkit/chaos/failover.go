package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// FailoverConfig describes a failover run: oncecall replicas on a Patroni
// cluster whose leader is killed, switched over and cut from its DCS while
// callers book, charge, send and add points.
type FailoverConfig struct {
	// Duration of the run phase. Default 3m.
	Duration time.Duration
	// Clients is the number of concurrent callers. Default 12.
	Clients int
	// Replicas is the number of oncecall processes. Default 2.
	Replicas int
	// BasePort is the first of the loopback ports the run uses (etcd,
	// Patroni, PostgreSQL, the simulator, the replicas): BasePort to
	// BasePort+49. Default 23000.
	BasePort int
	// Settle bounds the wait for every action to finish after the run.
	// Default 90s.
	Settle time.Duration
	// Seed makes the callers' choices repeatable. Default: the clock.
	Seed uint64
	// Binary is a built oncecall; empty builds cmd/oncecall.
	Binary string
	// Dir holds the cluster, the ledger and the logs; empty uses a
	// temporary folder, removed after a passing run.
	Dir string
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// FailoverReport is what a failover run found.
type FailoverReport struct {
	Report
	// Failovers counts changes of leader (kills and switchovers);
	// Crashes, Switchovers and DCSPauses the events caused.
	Failovers, Crashes, Switchovers, DCSPauses int
	// LostConfirmed: logical actions once told confirmed whose confirmed
	// action is missing from the final leader.
	LostConfirmed int
	// Unresolved: logical actions whose caller never heard a definitive
	// answer, even when checking back after the run.
	Unresolved int
	// UnknownKeys: logical actions one of whose attempts heard "outcome
	// unknown" (a commit whose answer was lost), and so were retried.
	UnknownKeys int
	// ReplicaExits: oncecall processes that ended on their own.
	ReplicaExits int
	// MaxWriteGap is the longest time no write was answered.
	MaxWriteGap time.Duration
	// events are the events caused, in order.
	events []event
}

// event is one crash, switchover or DCS pause, and when it was caused;
// writable is when the harness's own probe (a connection to the multi-host
// URL and a commit that waits for the synchronous standby) first succeeded
// after it, or zero.
type event struct {
	kind     string
	at       time.Time
	writable time.Time
}

// OK reports whether every count the line prints is zero, and nothing else
// a caller could be misled by happened.
func (r FailoverReport) OK() bool {
	return r.Report.OK() && r.LostConfirmed == 0 && r.Unresolved == 0 && r.ReplicaExits == 0
}

// String is the one summary line.
func (r FailoverReport) String() string {
	return fmt.Sprintf("failover: actions=%d failovers=%d duplicates=%d lost=%d false_confirmations=%d lost_confirmed=%d unresolved=%d max_write_gap_s=%.1f",
		r.Actions, r.Failovers, r.Duplicates, r.Lost, r.FalseConfirmations, r.LostConfirmed, r.Unresolved, r.MaxWriteGap.Seconds())
}

// Details is the line of further figures.
func (r FailoverReport) Details() string {
	return fmt.Sprintf("failover: crashes=%d switchovers=%d dcs_pauses=%d unknown_outcome_keys=%d attempts=%d polls=%d "+
		"told confirmed=%d rejected=%d pending=%d unanswered=%d provider_writes=%d points_entries=%d needs_operator=%d "+
		"still_unknown=%d contradictions=%d unattributed=%d protocol_errors=%d replica_exits=%d",
		r.Crashes, r.Switchovers, r.DCSPauses, r.UnknownKeys, r.Attempts, r.Polls, r.Confirmed, r.Rejected, r.Pending,
		r.Unanswered, r.Writes, r.Entries, r.NeedsOperator, r.StillUnknown, r.Contradictions, r.Unattributed,
		r.ProtocolErrors, r.ReplicaExits)
}

func (c *FailoverConfig) defaults() {
	c.Duration = cmp.Or(c.Duration, 3*time.Minute)
	c.Settle = cmp.Or(c.Settle, 90*time.Second)
	if c.Clients <= 0 {
		c.Clients = 12
	}
	if c.Replicas <= 0 {
		c.Replicas = 2
	}
	if c.BasePort <= 0 {
		c.BasePort = 23000
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
}

// Events of a failover run, in this order, again and again: each waits
// until the cluster is whole again (a leader, a synchronous standby, three
// members running) and then eventCalm of normal traffic.
const (
	eventCrash      = "crash"      // kill -9 of the leader's Patroni and postmaster, while commits wait for the standby
	eventSwitchover = "switchover" // a planned switchover
	eventDCSPause   = "dcs-pause"  // etcd stopped (SIGSTOP) for dcsPause, then continued
)

var eventCycle = []string{eventCrash, eventSwitchover, eventCrash, eventDCSPause}

const (
	eventCalm = 4 * time.Second
	dcsPause  = 6 * time.Second
	// stallBeforeCrash: the synchronous standby's WAL receiver is stopped
	// this long before the leader is killed, so that commits are waiting
	// for it when the leader dies and lose their answers.
	stallBeforeCrash = 400 * time.Millisecond
	// healTimeout bounds the wait for the cluster to be whole again.
	healTimeout = 3 * time.Minute
)

// RunFailover performs a failover run and audits it against the final
// leader and the provider's ledger. The error is for a run that could not
// be carried out.
func RunFailover(ctx context.Context, cfg FailoverConfig) (rep FailoverReport, err error) {
	cfg.defaults()
	logf := func(format string, args ...any) {
		fmt.Fprintf(cfg.Out, "failover: "+format+"\n", args...)
	}
	patroniBin, _, err := clusterBinaries()
	if err != nil {
		return rep, err
	}
	dir, temporary, err := runDir(cfg.Dir, "oncecall-failover-")
	if err != nil {
		return rep, err
	}
	if temporary {
		defer func() {
			if err == nil && rep.OK() {
				os.RemoveAll(dir)
			} else {
				logf("kept %s (cluster, ledger and logs)", dir)
			}
		}()
	}
	logf("seed %d, %d replicas, %d clients, run %v; files in %s", cfg.Seed, cfg.Replicas, cfg.Clients, cfg.Duration, dir)

	cl, err := startCluster(ctx, dir, cfg.BasePort, logf)
	if err != nil {
		return rep, err
	}
	defer cl.stop()
	dbURL := cl.url()
	if err := app.Migrate(ctx, dbURL); err != nil {
		return rep, err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return rep, err
	}
	defer pool.Close()
	slots := max(2000, int(cfg.Duration.Seconds()*40))
	w, err := seed(ctx, db.New(pool), slots, slots)
	if err != nil {
		return rep, fmt.Errorf("seed the database: %w", err)
	}

	sim, stopSim, err := startSimulator(ctx, dir, "127.0.0.1:"+strconv.Itoa(cfg.BasePort+30))
	if err != nil {
		return rep, err
	}
	defer stopSim()
	admin := providersim.Admin{BaseURL: sim.URL()}

	bin := cfg.Binary
	if bin == "" {
		logf("building oncecall")
		if bin, err = build(ctx, dir); err != nil {
			return rep, err
		}
	}
	rs := &replicas{bin: bin, dir: dir, env: replicaEnv(dbURL, sim.URL(), false, false), slots: make([]*replica, cfg.Replicas)}
	for i := range cfg.Replicas {
		rs.addrs = append(rs.addrs, "127.0.0.1:"+strconv.Itoa(cfg.BasePort+40+i))
	}
	defer rs.stopAll()
	for i := range cfg.Replicas {
		if err := rs.start(ctx, i, 30*time.Second); err != nil {
			return rep, err
		}
	}
	logf("%d replicas serving on %s, simulator at %s", cfg.Replicas, dbURL, sim.URL())

	f := &fleet{
		replicas: rs, hc: newHTTPClient(), apiKey: w.apiKey, org: w.org, run: strconv.FormatUint(cfg.Seed%1e6, 10),
		customers: w.customers, slots: w.slots, members: w.members,
		// A caller retries through every write gap until it is answered.
		budget: 4 * time.Minute, attemptsCap: 2000, pollsCap: 2000,
	}
	defer f.hc.CloseIdleConnections()

	stop := make(chan struct{})
	var clients sync.WaitGroup
	for i := range cfg.Clients {
		crng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1))
		clients.Go(func() { f.client(ctx, stop, crng) })
	}
	f.gaps.measure(true)
	chaosCtx, stopChaos := context.WithTimeout(ctx, cfg.Duration)
	defer stopChaos()
	progress := make(chan struct{})
	go func() {
		defer close(progress)
		for sleep(chaosCtx, 10*time.Second) {
			leader, sync := cl.roles()
			logf("%d actions, %d attempts, %d failovers; leader %s, sync standby %s",
				f.seq.Load(), f.attempts.Load(), rep.Failovers, name(leader), name(sync))
		}
	}()
	chaosErr := runEvents(ctx, chaosCtx, cl, patroniBin, &rep, logf)
	<-progress
	if chaosErr != nil || ctx.Err() != nil {
		close(stop)
		clients.Wait()
		return rep, errors.Join(chaosErr, ctx.Err())
	}
	close(stop)
	logf("run phase over after %d failovers: callers finishing", rep.Failovers)
	clients.Wait()
	f.gaps.measure(false)

	settled := time.Now()
	left := -1
	for end := settled.Add(cfg.Settle); time.Now().Before(end); {
		if left, err = unsettled(ctx, pool, w.tenants()); err == nil && left == 0 {
			break
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return rep, ctx.Err()
		}
	}
	logf("settle: %d unfinished after %v", left, time.Since(settled).Round(time.Millisecond))
	f.lateCheck(ctx, rand.New(rand.NewPCG(cfg.Seed, 1<<33)))

	ledger, err := admin.Ledger(ctx, "")
	if err != nil {
		return rep, err
	}
	// The pool connects only to a server that accepts writes: the final
	// leader.
	rep.Report, err = audit(ctx, pool, w.tenants(), ledger, f.all())
	if err != nil {
		return rep, err
	}
	stored, err := loadActions(ctx, pool, w.tenants())
	if err != nil {
		return rep, err
	}
	for _, l := range f.all() {
		if l.Unknown > 0 {
			rep.UnknownKeys++
		}
		if last := l.last(); last.Outcome != "confirmed" && last.Outcome != "rejected" {
			rep.Unresolved++
			rep.problem("%s %s: never answered definitively (last %q)", l.Style, l.key(), last.Outcome)
		}
		for _, a := range l.Answers {
			if s, ok := stored[a.ActionID]; a.Outcome == "confirmed" && (!ok || s.Outcome != "confirmed") {
				rep.LostConfirmed++
				rep.problem("%s %s: told confirmed for action %s, which the final leader holds as %q", l.Style, l.key(), a.ActionID, s.Outcome)
				break
			}
		}
	}
	rep.ReplicaExits = rs.exited()
	rep.MaxWriteGap, _ = f.gaps.longest()
	for _, g := range f.gaps.gaps() {
		logf("write gap of %.1fs %s%s", g.end.Sub(g.start).Seconds(), rep.cause(g), rep.share(g))
	}
	return rep, nil
}

// cause names the last event caused before g started (or within a second
// after: the last answer before an event may come just before it).
func (r *FailoverReport) cause(g gap) string {
	for i := len(r.events) - 1; i >= 0; i-- {
		if e := r.events[i]; !e.at.After(g.start.Add(time.Second)) {
			return fmt.Sprintf("from %.1fs after the %s", g.start.Sub(e.at).Seconds(), e.kind)
		}
	}
	return "before any event"
}

// share splits g at the moment the database took a write again after the
// event before it: what PostgreSQL and Patroni took, and what oncecall and its
// callers took after that (reconnecting, the callers' retry delays).
func (r *FailoverReport) share(g gap) string {
	for i := len(r.events) - 1; i >= 0; i-- {
		e := r.events[i]
		if e.at.After(g.start.Add(time.Second)) {
			continue
		}
		if e.writable.IsZero() || e.writable.Before(g.start) {
			return ""
		}
		// The probe polls every 50 ms on a fresh connection: it may see the
		// database writable a little after oncecall's pool already did.
		return fmt.Sprintf(" (database writable after %.1fs, oncecall and its callers %.1fs more)",
			e.writable.Sub(g.start).Seconds(), max(0, g.end.Sub(e.writable)).Seconds())
	}
	return ""
}

// probeWritable commits a write through url, every 50 ms from now on, until
// one succeeds on a primary with a synchronous standby streaming from it,
// and returns when it did (zero if ctx ended first): when the cluster took
// writes again as oncecall needs them (a commit confirmed by a standby).
func probeWritable(ctx context.Context, url string) time.Time {
	for {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(attempt, url)
		synced := false
		if err == nil {
			_, err = conn.Exec(attempt, "SELECT txid_current()")
			if err == nil {
				err = conn.QueryRow(attempt, `SELECT count(*) > 0 FROM pg_stat_replication
					WHERE sync_state IN ('sync', 'quorum') AND state = 'streaming'`).Scan(&synced)
			}
			conn.Close(context.WithoutCancel(ctx))
		}
		cancel()
		if err == nil && synced {
			return time.Now()
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return time.Time{}
		}
	}
}

func name(n *pnode) string {
	if n == nil {
		return "none"
	}
	return n.name
}

// runEvents causes the cycle of events until chaos ends; an event under
// way is seen through (a new leader, the crashed node back) unless run
// ends.
func runEvents(run, chaos context.Context, cl *cluster, patroniBin string, rep *FailoverReport, logf func(string, ...any)) error {
	ctx := chaos
	for i := 0; ; i++ {
		before, err := cl.waitHealthy(ctx, healTimeout, 3)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if !sleep(ctx, eventCalm) {
			return nil
		}
		leader, sync := cl.roles()
		if leader == nil {
			leader = before
		}
		ev := eventCycle[i%len(eventCycle)]
		rep.events = append(rep.events, event{kind: ev, at: time.Now()})
		// A probe of when the database takes writes again; it starts once the
		// event is under way (a crash stalls the standby first).
		probed := make(chan time.Time, 1)
		probeCtx, stopProbe := context.WithTimeout(run, healTimeout)
		defer stopProbe() // each event's ends with its own, below; this one covers the returns
		startProbe := func() { go func() { probed <- probeWritable(probeCtx, cl.url()) }() }
		switch ev {
		case eventCrash:
			// Commits are left waiting for the synchronous standby when
			// the leader dies: their callers lose the answers.
			var resume func()
			if sync != nil {
				if pid := sync.walReceiverPID(ctx); pid > 0 && syscall.Kill(pid, syscall.SIGSTOP) == nil {
					resume = func() { syscall.Kill(pid, syscall.SIGCONT) } //nolint:errcheck // it may have exited
					sleep(ctx, stallBeforeCrash)
				}
			}
			logf("crash: kill -9 of %s's Patroni and postmaster", leader.name)
			err := cl.crash(leader)
			startProbe()
			if resume != nil {
				resume()
			}
			if err != nil {
				return err
			}
			rep.Crashes++
		case eventSwitchover:
			logf("switchover away from %s", leader.name)
			if err := cl.switchover(leader); err != nil {
				return err
			}
			startProbe()
			rep.Switchovers++
		case eventDCSPause:
			logf("etcd paused for %v", dcsPause)
			cl.etcd.signal(syscall.SIGSTOP)
			startProbe()
			sleep(run, dcsPause)
			cl.etcd.signal(syscall.SIGCONT)
			rep.DCSPauses++
		}
		if ev != eventDCSPause {
			// Count the failover once another node leads.
			if err := waitFor(run, healTimeout, "a new leader", func() bool {
				now, _ := cl.roles()
				return now != nil && now != leader
			}); err != nil {
				return err
			}
			now, _ := cl.roles()
			rep.Failovers++
			logf("%s leads", now.name)
		}
		rep.events[len(rep.events)-1].writable = <-probed
		stopProbe()
		if ev == eventCrash {
			// The crashed machine comes back and rejoins as a standby.
			if err := cl.startPatroni(leader, patroniBin); err != nil {
				return err
			}
		}
	}
}
