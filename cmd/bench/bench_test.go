package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/buildtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	// The bench starts its own executable, this test binary here, to serve
	// the baseline stack in a process of its own.
	if dbURL := os.Getenv(bareEnv); dbURL != "" {
		if err := serveBare(dbURL); err != nil {
			fmt.Fprintln(os.Stderr, "bench baseline server:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(buildtest.Main(m, pgtest.Main))
}

// oncecallBin is oncecall built once for this test process
// (internal/testkit/buildtest), which the tests that run it as a process share
// instead of each building it as make build does.
func oncecallBin(t *testing.T) []string {
	return []string{"--oncecall-bin", buildtest.Command(t, "cmd/oncecall")}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	us := func(n uint32) time.Duration { return time.Duration(n) * time.Microsecond }
	for _, tc := range []struct {
		in   []uint32
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]uint32{7}, 0.99, us(7)},
		{[]uint32{1, 2, 3, 4}, 0.5, us(2)},
		{[]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.99, us(10)},
		{[]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.5, us(5)},
	} {
		if got := percentile(tc.in, tc.q); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.in, tc.q, got, tc.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags([]string{"--concurrency", "32, 8,8", "--scenarios", "replay,first"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.concurrency) != 2 || cfg.concurrency[0] != 8 || cfg.concurrency[1] != 32 {
		t.Errorf("concurrency = %v, want [8 32]", cfg.concurrency)
	}
	if strings.Join(cfg.scenarios, ",") != "first,replay" {
		t.Errorf("scenarios = %v, want them in run order", cfg.scenarios)
	}
	if cfg.duration != 2*time.Second || cfg.rounds != 5 || cfg.preload != 1_000_000 {
		t.Errorf("defaults: duration %v rounds %d preload %d", cfg.duration, cfg.rounds, cfg.preload)
	}
	if cfg.server != serverProcess {
		t.Errorf("default server %q, want %s", cfg.server, serverProcess)
	}
	if cfg.pruneBacklog != 69_444 {
		t.Errorf("default prune backlog %d, want 69444 (10 million actions a day over 10 minutes)", cfg.pruneBacklog)
	}
	for _, args := range [][]string{
		{"--server", "docker"},
		{"--scenarios", "first,nope"},
		{"--concurrency", "0"},
		{"--url", "http://127.0.0.1:8080"}, // without --database-url
		{"--duration", "0s"},
		{"--rounds", "0"},
		{"--prune-backlog", "0"},
		{"--prune-backlog", "-1"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// TestBenchRuns runs every scenario briefly against `oncecall serve` built
// and started as in make bench, and checks the report and the JSON file.
func TestBenchRuns(t *testing.T) {
	t.Parallel()
	stdout, rep := runBench(t, "--duration", "300ms", "--rounds", "1", "--concurrency", "2,8", "--preload", "2000", "--prune-backlog", "2000")
	if got, want := len(rep.Scenarios), len(scenarioOrder)*2; got != want {
		t.Fatalf("%d scenario results, want %d", got, want)
	}
	for _, s := range rep.Scenarios {
		if s.Skipped {
			if s.Name != "dasha" {
				t.Errorf("%s skipped: %s", s.Name, s.Note)
			}
			continue
		}
		if s.RPS <= 0 || s.Errors != 0 || s.P50 > s.P99 {
			t.Errorf("%s at %d: rps %v, errors %d, p50 %v, p99 %v", s.Name, s.Concurrency, s.RPS, s.Errors, s.P50, s.P99)
		}
		// A write scenario writes WAL, at least a commit record per request.
		// (The figure is the whole server's, so background work such as
		// autovacuum can add to any scenario: nothing is asserted of reads.)
		readOnly := s.Name == "select" || s.Name == "replay" || s.Name == "floor"
		if w := s.WALKBPerRequest; w == nil || (!readOnly && *w <= 0) {
			t.Errorf("%s at %d: WAL per request %s KB", s.Name, s.Concurrency, show(w))
		}
		if c := s.CPUIdle; c == nil || *c < 0 || *c > 1 {
			t.Errorf("%s at %d: CPU idle %s", s.Name, s.Concurrency, show(c))
		}
		if c := s.CPUSteal; c == nil || *c < 0 || *c > 1 {
			t.Errorf("%s at %d: CPU steal %s", s.Name, s.Concurrency, show(c))
		}
		// What a request cost in CPU, by process: the machine's total, the
		// server that answered (oncecall or the baseline) and PostgreSQL,
		// which every scenario uses but floor and replay (answered from the
		// answers oncecall keeps in memory).
		cpu := s.CPU
		server := "oncecall"
		switch s.Name {
		case "floor", "bare", "statement", "peer", "peer_replay":
			server = "baseline"
		case "ceiling", "ceiling_tx", "select", "bare_sql":
			server = "client"
		}
		if cpu["total"] <= 0 || cpu[server] <= 0 || (s.Name != "floor" && s.Name != "replay" && cpu["postgres"] <= 0) {
			t.Errorf("%s at %d: CPU per request %v, want total, %s and postgres", s.Name, s.Concurrency, cpu, server)
		}
		// oncecall's heap allocations per request: reported for the
		// scenarios whose requests it answers, and only for those.
		if a := s.Allocs; (a != nil) != (server == "oncecall") || (a != nil && (a.Objects < 1 || a.Bytes < a.Objects)) {
			t.Errorf("%s at %d: oncecall's allocations per request %+v", s.Name, s.Concurrency, a)
		}
	}
	for _, r := range ratios {
		got := rep.Ratios[r.name]
		if got.Target != r.target || got.Clients["2"] <= 0 || got.Clients["8"] <= 0 {
			t.Errorf("ratio %s at 2 and 8 clients: %+v", r.name, got)
		}
		if hasBound := got.Bound["2"] > 0 && got.Bound["8"] > 0; hasBound != (r.bound != nil) {
			t.Errorf("ratio %s: bound %v", r.name, got.Bound)
		}
	}
	for _, c := range []string{"2", "8"} {
		if rep.FirstBoundRPS.OnFloor[c] <= 0 || rep.FirstBoundRPS.OnBare[c] <= 0 {
			t.Errorf("first's bound rate at %s clients: %+v", c, rep.FirstBoundRPS)
		}
	}
	if rep.ReplayP99.Clients["8"] <= 0 || rep.ReplayP99.Floor["8"] <= 0 {
		t.Errorf("replay p99 %v with floor's %v", rep.ReplayP99.Clients, rep.ReplayP99.Floor)
	}
	if rep.Server != serverProcess || rep.ServerMaxRSSMiB == nil || *rep.ServerMaxRSSMiB <= 0 ||
		!strings.Contains(rep.ServerRSSOf, "oncecall serve, pid") || rep.CPUs < 1 {
		t.Errorf("server %q, rss %v of %q, %d CPUs", rep.Server, rep.ServerMaxRSSMiB, rep.ServerRSSOf, rep.CPUs)
	}
	for _, want := range []string{"2 clients", "8 clients", "first/ceiling", "bound 8", "server_max_rss_mib", "load average", "WAL KB/req", "floor p99", "on bare (bare - bare_sql + ceiling)", "CPU idle %", "steal %", "allocs/req", "alloc KB/req", "CPU time per request in µs"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

// TestBenchPrune runs prune beside first with a small backlog: the prune
// takes some of it at its duty until the window ends, nothing else, and the
// report accounts for every row of the backlog with prune's p99 against
// first's.
func TestBenchPrune(t *testing.T) {
	t.Parallel()
	stdout, rep := runBench(t, "--scenarios", "first,prune", "--prune-backlog", "2000", "--duration", "1s",
		"--rounds", "1", "--concurrency", "2")
	var prune *jsonScenario
	for i, s := range rep.Scenarios {
		if s.Name == "prune" {
			prune = &rep.Scenarios[i]
		}
	}
	if prune == nil || prune.Skipped || prune.RPS <= 0 || prune.P99 <= 0 || len(prune.Rounds) != 1 {
		t.Fatalf("prune's result: %+v", prune)
	}
	for _, p := range []*pruneFigures{prune.Prune, prune.Rounds[0].Prune} {
		if p == nil {
			t.Fatal("prune's figures are missing")
		}
		if p.Backlog != 2000 || p.ActionsDeleted <= 0 || p.ActionsDeleted+p.ActionsLeft != 2000 || p.BodiesCleared+p.BodiesLeft != 2000 {
			t.Errorf("prune's counts: %+v, want some of the backlog of 2000 of each taken and the rest left", p)
		}
		// The window (1 s) leaves room for a first batch on a busy machine.
		// How much of the time the prune spent in statements depends on
		// the machine (a first batch slower than the window is all busy);
		// internal/prune's TestRestsBetweenBatches holds the duty itself.
		if p.Seconds <= 0 || p.RowsPerSecond <= 0 || p.NeededRowsPerSecond != round(4000/600.0, 1) || p.WindowShare <= 0 || p.WindowShare > 1 ||
			p.BusyShare <= 0 || p.BusyShare > 1 {
			t.Errorf("prune's figures: %+v", p)
		}
	}
	if r := rep.Ratios["prune/first"]; r.Of != "p99" || r.Target != 1.2 || r.Clients["2"] <= 0 {
		t.Errorf("prune/first: %+v, want a ratio of p99s with a target of 1.2", r)
	}
	for _, want := range []string{"prune: first's bookings while one prune", "needed rows/s", "prune/first p99", "<= 1.20"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

// TestPruneTakesNothingElse proves that prune does not run when anything
// but its backlog is due for pruning (an old action of another tenant), and
// leaves it where it was.
func TestPruneTakesNothingElse(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg, err := parseFlags(append([]string{"--duration", "300ms", "--prune-backlog", "100", "--database-url", pgtest.NewDB(t)},
		oncecallBin(t)...), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := start(ctx, cfg, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	f, err := b.newTenant(ctx, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.preloadAged(ctx, f.tenant, "old", 3, aged{newest: 40 * 24 * time.Hour, step: time.Second, bodies: true}); err != nil {
		t.Fatal(err)
	}
	r, err := b.runPrune(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !r.skipped || !strings.Contains(r.note, "103 actions and 100 bodies are due") {
		t.Errorf("prune with someone else's old actions in the table: skipped %v, %q", r.skipped, r.note)
	}
	var n int
	if err := b.pool.QueryRow(ctx, "SELECT count(result) FROM actions WHERE tenant_id = $1", f.tenant).Scan(&n); err != nil || n != 3 {
		t.Errorf("someone else's old actions with a body: %d (%v), want 3", n, err)
	}
	var backlog int
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM actions WHERE tenant_id <> $1", f.tenant).Scan(&backlog); err != nil || backlog != 0 {
		t.Errorf("%d actions left of the backlog (%v), want none", backlog, err)
	}
}

// TestBounds checks the bounds' arithmetic: a request that costs one floor
// request and one select can run at most 1/(1/floor + 1/select) times a
// second; a first execution's rate is bounded on floor and on bare, and the
// lower holds.
func TestBounds(t *testing.T) {
	rps := map[string]float64{"floor": 30000, "select": 20000, "ceiling": 3000, "bare": 2000, "bare_sql": 4000,
		"peer": 1000, "peer_replay": 4000}
	get := func(name string) float64 { return rps[name] }
	onFloor, onBare := firstBoundRPS(get)
	if round(onFloor, 1) != 2727.3 || round(onBare, 1) != 1714.3 {
		t.Errorf("first's rate on floor %v, on bare %v; want 2727.3 and 1714.3", onFloor, onBare)
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"replay/select", replaySelectBound(get), 0.6},   // 12,000 / 20,000
		{"first/ceiling", firstCeilingBound(get), 0.571}, // 1/(1/2,000 - 1/4,000 + 1/3,000) = 1,714 / 3,000
		{"first/bare", firstBareBound(get), 0.857},       // 1,714 / 2,000
		{"first/peer", firstPeerBound(get), 1.714},       // 1,714 / 1,000
		{"replay/peer_replay", replayPeerBound(get), 3},  // 12,000 / 4,000
		{"bare/bare_sql", bareSQLBound(get), 0.882},      // 1/(1/30,000 + 1/4,000) = 3,529 / 4,000
	} {
		if c.got != c.want {
			t.Errorf("%s bound = %v, want %v", c.name, c.got, c.want)
		}
	}
	// bare cheaper than floor plus bare_sql would make the floor-built
	// bound the lower one.
	rps["bare"] = 3900
	if got := firstCeilingBound(get); got != 0.909 { // 2,727 / 3,000
		t.Errorf("first/ceiling bound with bare at 3,900 = %v, want 0.909 (on floor)", got)
	}
	delete(rps, "bare")
	if got := firstCeilingBound(get); got != 0.909 {
		t.Errorf("first/ceiling bound without bare = %v, want 0.909 (on floor)", got)
	}
	delete(rps, "floor")
	if v := replaySelectBound(get); v != 0 {
		t.Errorf("a bound without its runs = %v, want 0 (not known)", v)
	}
	if v := firstBareBound(get); v != 0 {
		t.Errorf("first/bare's bound without floor and bare = %v, want 0 (not known)", v)
	}
}

// TestBenchRunsInProcess runs oncecall inside the bench, as --cpuprofile
// needs to profile it.
func TestBenchRunsInProcess(t *testing.T) {
	t.Parallel()
	prof := t.TempDir()
	_, rep := runBench(t, "--server", "inprocess", "--duration", "300ms", "--rounds", "1", "--concurrency", "2",
		"--scenarios", "select,replay", "--cpuprofile", prof)
	if rep.Server != serverInProcess || rep.Ratios["replay/select"].Clients["2"] <= 0 || len(rep.Scenarios) != 2 {
		t.Errorf("in-process report: %+v", rep)
	}
	if fi, err := os.Stat(filepath.Join(prof, "replay-c2.pprof")); err != nil || fi.Size() == 0 {
		t.Errorf("replay profile: %v", err)
	}
}

// runBench runs the bench with args on a fresh database and returns what
// it printed and its JSON report; any duplicate or lost effect fails.
func runBench(t *testing.T, args ...string) (string, jsonReport) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	if !slices.Contains(args, serverInProcess) {
		args = append(args, oncecallBin(t)...)
	}
	err := run(t.Context(), append(args, "--database-url", pgtest.NewDB(t), "--json", out), &stdout, &stderr)
	t.Log(stderr.String())
	t.Log(stdout.String())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "DUPLICATE") {
		t.Fatalf("a run reported a duplicate or lost effect")
	}
	var rep jsonReport
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, data)
	}
	return stdout.String(), rep
}

// TestEffectCheckFindsDuplicates proves the check fails a run whose
// database holds more effects than its clients were told about, and one
// whose clients were told about effects that do not exist.
func TestEffectCheckFindsDuplicates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg, err := parseFlags(append([]string{"--duration", "1s", "--database-url", pgtest.NewDB(t)}, oncecallBin(t)...), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	b, err := start(ctx, cfg, &bytes.Buffer{}, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	f, err := b.newTenant(ctx, "check")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.addSlots(ctx, f, 3); err != nil {
		t.Fatal(err)
	}
	tenants := []uuid.UUID{f.tenant}
	before, err := b.effects(ctx, tenants)
	if err != nil {
		t.Fatal(err)
	}
	slot, customer, _ := f.take()
	a := b.post(b.base+"/v1/appointments", f.apiKey, "k1", bookBody(customer, slot), false)
	if a.status != http.StatusCreated {
		t.Fatalf("book: %d %s", a.status, a.snippet)
	}
	var honest tally
	honest.firsts.Add(1)
	if _, err := b.finish(ctx, "honest", 1, stats{}, tenants, before, &honest, true); err != nil {
		t.Fatal(err)
	}
	if len(b.violations) != 0 {
		t.Fatalf("a correct run was flagged: %v", b.violations)
	}

	// A second appointment for the same action, made behind the API's back.
	other, _, _ := f.take()
	if _, err := b.pool.Exec(ctx, `INSERT INTO appointments (id, tenant_id, customer_id, slot_id, action_id)
		SELECT gen_random_uuid(), tenant_id, customer_id, $1, action_id FROM appointments WHERE tenant_id = $2`, other, f.tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := b.finish(ctx, "doubled", 1, stats{}, tenants, before, &honest, true); err != nil {
		t.Fatal(err)
	}
	if len(b.violations) != 1 || !strings.Contains(b.violations[0], "more than one appointment") {
		t.Fatalf("violations = %v, want the doubled action", b.violations)
	}

	// Clients told of three first executions; the database has two rows.
	var lying tally
	lying.firsts.Add(3)
	if _, err := b.finish(ctx, "lost", 1, stats{}, tenants, before, &lying, false); err != nil {
		t.Fatal(err)
	}
	if len(b.violations) != 2 || !strings.Contains(b.violations[1], "only 2 new appointments") {
		t.Fatalf("violations = %v, want the lost effect", b.violations)
	}
}

func show(v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// TestBenchRounds runs two short rounds and checks that the JSON carries
// every round, the medians, each ratio's share of its bound, the peer
// ratios and the replay p99.
func TestBenchRounds(t *testing.T) {
	t.Parallel()
	stdout, rep := runBench(t, "--server", "inprocess", "--duration", "200ms", "--rounds", "2", "--concurrency", "2",
		"--scenarios", "ceiling,select,floor,first,replay,peer,peer_replay")
	if rep.Rounds != 2 || len(rep.Scenarios) != 7 {
		t.Fatalf("rounds %d, %d scenario results: want 2 and 7", rep.Rounds, len(rep.Scenarios))
	}
	for _, s := range rep.Scenarios {
		if len(s.Rounds) != 2 {
			t.Errorf("%s: %d rounds, want 2", s.Name, len(s.Rounds))
			continue
		}
		lo, hi := min(s.Rounds[0].RPS, s.Rounds[1].RPS), max(s.Rounds[0].RPS, s.Rounds[1].RPS)
		if s.RPS < lo || s.RPS > hi || s.RPS <= 0 {
			t.Errorf("%s: median rps %v outside its rounds' %v..%v", s.Name, s.RPS, lo, hi)
		}
	}
	for name, shareTarget := range map[string]float64{"first/ceiling": 0.95, "replay/select": 0.8} {
		r := rep.Ratios[name]
		if len(r.Rounds["2"]) != 2 || r.Bound["2"] <= 0 || r.Share["2"] <= 0 || r.ShareTarget != shareTarget {
			t.Errorf("%s: %+v, want two rounds, a bound, a share and a share target of %v", name, r, shareTarget)
		}
	}
	for name, target := range map[string]float64{"first/peer": 1.5, "replay/peer_replay": 2} {
		r := rep.Ratios[name]
		if r.Target != target || r.Clients["2"] <= 0 || len(r.Rounds["2"]) != 2 {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if p := rep.ReplayP99; p.TargetMS != 5 || p.AtClients != 32 || p.Clients["2"] <= 0 {
		t.Errorf("replay p99: %+v", p)
	}
	for _, want := range []string{"median of 2 rounds", "share 2", "share target", "first/peer", "replay/peer_replay", "replay p99 ms"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}
