package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ratio is one figure of merit: rps of num over rps of den at the same
// concurrency, and the target it should meet (0: reported, no target).
// bound, when set, is the highest value the ratio can have on this machine
// by the runs' own figures (see bounds), and shareTarget the share of that
// bound (ratio / bound) it should reach (0: none). A p99 ratio is of the
// p99s instead, where lower is better: its target is the most it may be.
type ratio struct {
	name, num, den string
	target         float64
	bound          func(rps func(string) float64) float64
	shareTarget    float64
	p99            bool
}

// label is the ratio's name as the report prints it.
func (r ratio) label() string {
	if r.p99 {
		return r.name + " p99"
	}
	return r.name
}

// met says whether v meets the ratio's target.
func (r ratio) met(v float64) bool {
	if r.p99 {
		return v <= r.target
	}
	return v >= r.target
}

// targetText is the ratio's target as the report prints it.
func (r ratio) targetText() string {
	if r.p99 {
		return fmt.Sprintf("<= %.2f", r.target)
	}
	return fmt.Sprintf(">= %.2f", r.target)
}

var ratios = []ratio{
	{name: "first/ceiling", num: "first", den: "ceiling", target: 0.8, bound: firstCeilingBound, shareTarget: 0.95},
	{name: "first/bare", num: "first", den: "bare", target: 0.9, bound: firstBareBound, shareTarget: 0.95},
	{name: "replay/select", num: "replay", den: "select", target: 0.6, bound: replaySelectBound, shareTarget: 0.8},
	{name: "grown/first", num: "grown", den: "first", target: 0.9},
	{name: "first/ceiling_tx", num: "first", den: "ceiling_tx"},
	// statement is first's statement on bare's stack with none of
	// oncecall's own code around it: first/statement is what that code
	// costs a first execution, measured rather than built from a bound, and
	// statement's share of first's bound says how much of the bound such a
	// server reaches on this machine.
	{name: "first/statement", num: "first", den: "statement"},
	{name: "statement/ceiling", num: "statement", den: "ceiling", bound: firstCeilingBound},
	// The baseline against a bound built on floor, as first's bound on
	// floor is: the share of it that a server doing one statement per
	// request and nothing else reaches on this machine.
	{name: "bare/bare_sql", num: "bare", den: "bare_sql", bound: bareSQLBound},
	// The peer: idempotency keys done by hand on bare's stack (peer.go).
	{name: "first/peer", num: "first", den: "peer", target: 1.5, bound: firstPeerBound},
	{name: "replay/peer_replay", num: "replay", den: "peer_replay", target: 2, bound: replayPeerBound},
	// A first execution's p99 while a prune runs over its p99 without
	// one (prune.go).
	{name: "prune/first", num: "prune", den: "first", target: pruneP99Target, p99: true},
}

// The bounds take a saturated machine, where what requests cost in CPU
// adds up: a scenario at x req/s costs 1/x of the machine per request.
// A first execution costs at least its statement (ceiling) plus the HTTP
// side of a request on the server's stack. That side costs at least floor
// (read, authenticated, decoded, answered, the client included), and a
// request that waits for a statement costs at least what bare costs
// beyond its own statement (bare minus bare_sql): floor's processes never
// fall idle, a waiting request's are woken again each time. Both give an
// upper bound on first's rate (firstBoundRPS); the lower holds, and the
// bounds of first/ceiling, first/bare and first/peer are it over their
// denominators. A replay costs at least floor plus its read (select). A
// bound is 0 (not known) when a run it needs is missing.

// firstBoundRPS is the highest rate of first executions the runs allow,
// built on floor and on bare (0: not known).
func firstBoundRPS(rps func(string) float64) (onFloor, onBare float64) {
	floor, ceiling, bare, bareSQL := rps("floor"), rps("ceiling"), rps("bare"), rps("bare_sql")
	if ceiling == 0 {
		return 0, 0
	}
	if floor > 0 {
		onFloor = 1 / (1/floor + 1/ceiling)
	}
	if bare > 0 && bareSQL > 0 {
		onBare = 1 / (max(1/bare-1/bareSQL, 0) + 1/ceiling)
	}
	return onFloor, onBare
}

// firstBound is the bound of first over the rate of den: the lower known
// of firstBoundRPS's rates over den's.
func firstBound(den string) func(rps func(string) float64) float64 {
	return func(rps func(string) float64) float64 {
		onFloor, onBare := firstBoundRPS(rps)
		first := onFloor
		if onBare > 0 && (first == 0 || onBare < first) {
			first = onBare
		}
		if d := rps(den); first > 0 && d > 0 {
			return round(first/d, 3)
		}
		return 0
	}
}

var (
	firstCeilingBound = firstBound("ceiling")
	firstBareBound    = firstBound("bare")
	// A first execution costs at least what it costs against ceiling,
	// whatever the peer costs.
	firstPeerBound = firstBound("peer")
)

// bare costs at least floor plus its statement (bare_sql), as first costs
// at least floor plus ceiling.
func bareSQLBound(rps func(string) float64) float64 {
	return costRatio(rps("bare_sql"), rps("floor"), rps("bare_sql"))
}

func replaySelectBound(rps func(string) float64) float64 {
	return costRatio(rps("select"), rps("floor"), rps("select"))
}

// A replay costs at least floor and select, whatever the peer's replay
// costs.
func replayPeerBound(rps func(string) float64) float64 {
	return costRatio(rps("peer_replay"), rps("floor"), rps("select"))
}

// costRatio is the rps of a request costing one of a and one of b, over den.
func costRatio(den, a, b float64) float64 {
	if den == 0 || a == 0 || b == 0 {
		return 0
	}
	return round(1/(1/a+1/b)/den, 3)
}

// rssTargetMiB is the target for the server's peak RSS.
const rssTargetMiB = 64

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 2) }

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

func (r result) line() string {
	if r.skipped {
		return fmt.Sprintf("%-10s %3d clients: skipped: %s", r.name, r.concurrency, r.note)
	}
	s := fmt.Sprintf("%-10s %3d clients: %8.1f req/s  p50 %6.2f ms  p99 %7.2f ms  errors %d",
		r.name, r.concurrency, r.rps, ms(r.p50), ms(r.p99), r.errors)
	if r.walOK {
		s += fmt.Sprintf("  WAL %.2f KB/req", r.walBytes/1024)
	}
	if r.idleOK {
		s += fmt.Sprintf("  CPU idle %.0f%% steal %.0f%%", 100*r.idle, 100*r.steal)
	}
	if r.allocOK {
		s += fmt.Sprintf("  oncecall allocs/req %.0f (%.1f KB)", r.allocs, r.allocBytes/1024)
	}
	if r.cpu != nil {
		var parts []string
		for _, name := range cpuColumns(r.cpu) {
			if name != "total" {
				parts = append(parts, fmt.Sprintf("%s %.0f", name, r.cpu[name]))
			}
		}
		s += fmt.Sprintf("  CPU µs/req %.0f (%s)", r.cpu["total"], strings.Join(parts, ", "))
	}
	if r.note != "" {
		s += " (" + r.note + ")"
	}
	return s
}

// find returns the result of a scenario at concurrency c in a round.
func (b *bench) find(name string, c, round int) (result, bool) {
	for _, r := range b.results {
		if r.name == name && r.concurrency == c && r.round == round && !r.skipped && r.rps > 0 {
			return r, true
		}
	}
	return result{}, false
}

// rpsIn is a scenario's rate at concurrency c in a round (0: it did not
// run).
func (b *bench) rpsIn(c, round int) func(name string) float64 {
	return func(name string) float64 {
		res, _ := b.find(name, c, round)
		return res.rps
	}
}

// p99In is a scenario's p99 in milliseconds at concurrency c in a round
// (0: it did not run).
func (b *bench) p99In(c, round int) func(name string) float64 {
	return func(name string) float64 {
		res, _ := b.find(name, c, round)
		return ms(res.p99)
	}
}

// ratioFigures is one ratio at one concurrency: its value, its bound and
// its share of the bound (value / bound) in each round that had the runs
// they need, and the median of each (0: not known).
type ratioFigures struct {
	values, bounds, shares []float64
	value, bound, share    float64
}

// ratioValues computes every ratio the runs allow, at every concurrency,
// in every round, with its bound and share.
func (b *bench) ratioValues() map[string]map[int]*ratioFigures {
	out := map[string]map[int]*ratioFigures{}
	for _, r := range ratios {
		out[r.name] = map[int]*ratioFigures{}
		for _, c := range b.cfg.concurrency {
			f := &ratioFigures{}
			for round := 1; round <= b.cfg.rounds; round++ {
				rps := b.rpsIn(c, round)
				of := rps
				if r.p99 {
					of = b.p99In(c, round)
				}
				v := 0.0
				if num, den := of(r.num), of(r.den); num > 0 && den > 0 {
					v = round3(num / den)
					f.values = append(f.values, v)
				}
				if r.bound == nil {
					continue
				}
				if bound := r.bound(rps); bound > 0 {
					f.bounds = append(f.bounds, bound)
					if v > 0 {
						f.shares = append(f.shares, round3(v/bound))
					}
				}
			}
			f.value, f.bound, f.share = round3(median(f.values)), round3(median(f.bounds)), round3(median(f.shares))
			out[r.name][c] = f
		}
	}
	return out
}

func round3(v float64) float64 { return round(v, 3) }

// firstBoundFigures is firstBoundRPS at every concurrency: the median of
// the rounds' rates built on floor and on bare (absent when not known).
func (b *bench) firstBoundFigures() (onFloor, onBare map[int]float64) {
	onFloor, onBare = map[int]float64{}, map[int]float64{}
	for _, c := range b.cfg.concurrency {
		var fs, bs []float64
		for round := 1; round <= b.cfg.rounds; round++ {
			f, bb := firstBoundRPS(b.rpsIn(c, round))
			if f > 0 {
				fs = append(fs, f)
			}
			if bb > 0 {
				bs = append(bs, bb)
			}
		}
		if len(fs) > 0 {
			onFloor[c] = round(median(fs), 1)
		}
		if len(bs) > 0 {
			onBare[c] = round(median(bs), 1)
		}
	}
	return onFloor, onBare
}

// replayP99Target is the target for a replay's p99 at replayP99Clients.
const (
	replayP99Target  = 5 * time.Millisecond
	replayP99Clients = 32
)

// report prints the table of medians, the ratios at every concurrency
// against their targets with their bounds and shares, the replay p99, the
// server's memory and the machine's load, and writes the JSON file if
// asked.
func (b *bench) report() error {
	sums := b.summaries()
	rounds := b.cfg.rounds
	fmt.Fprintf(b.stdout, "median of %d rounds (each round runs every scenario at every concurrency, in the same order); req/s range: the rounds' lowest and highest\n", rounds)
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tclients\treq/s\treq/s range\tp50 ms\tp99 ms\terrors\tWAL KB/req\tCPU idle %\tsteal %\tallocs/req\talloc KB/req\t")
	for _, s := range sums {
		if s.skipped {
			fmt.Fprintf(tw, "%s\t%d\tskipped\t\t\t\t\t\t\t\t\t\t\n", s.name, s.concurrency)
			continue
		}
		wal, idle, steal, allocs, allocKB := "-", "-", "-", "-", "-"
		if s.walOK {
			wal = fmt.Sprintf("%.2f", s.walBytes/1024)
		}
		if s.allocOK {
			allocs, allocKB = fmt.Sprintf("%.0f", s.allocs), fmt.Sprintf("%.1f", s.allocBytes/1024)
		}
		if s.idleOK {
			idle, steal = fmt.Sprintf("%.0f", 100*s.idle), fmt.Sprintf("%.0f", 100*s.steal)
		}
		lo, hi := math.Inf(1), 0.0
		for _, r := range s.rounds {
			if !r.skipped {
				lo, hi = min(lo, r.rps), max(hi, r.rps)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f-%.0f\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t%s\t%s\t\n", s.name, s.concurrency, s.rps, lo, hi,
			ms(s.p50), ms(s.p99), s.errors, wal, idle, steal, allocs, allocKB)
	}
	tw.Flush()
	fmt.Fprintln(b.stdout, "allocs/req, alloc KB/req: the heap allocations oncecall made per request it answered (its /metrics: Go's own counters, steady whatever the machine's speed)")
	b.reportCPU(sums)
	b.reportOverload(sums)
	b.reportPrune(sums, b.ratioValues())
	for _, r := range b.results {
		if r.note != "" {
			fmt.Fprintf(b.stdout, "note: %s at %d clients in round %d: %s\n", r.name, r.concurrency, r.round, r.note)
		}
	}

	figures := b.ratioValues()
	fmt.Fprintln(b.stdout)
	fmt.Fprintf(b.stdout, "ratios: computed within each round, then the median of %d rounds; bound and share (ratio / bound) likewise\n", rounds)
	tw = tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ratio")
	for _, c := range b.cfg.concurrency {
		fmt.Fprintf(tw, "\t%d clients", c)
	}
	fmt.Fprint(tw, "\ttarget")
	for _, c := range b.cfg.concurrency {
		fmt.Fprintf(tw, "\tbound %d", c)
	}
	for _, c := range b.cfg.concurrency {
		fmt.Fprintf(tw, "\tshare %d", c)
	}
	fmt.Fprintln(tw, "\tshare target\t")
	known := func(v float64) string {
		if v > 0 {
			return fmt.Sprintf("\t%.3f", v)
		}
		return "\t-"
	}
	for _, r := range ratios {
		fmt.Fprint(tw, r.label())
		for _, c := range b.cfg.concurrency {
			v := figures[r.name][c].value
			switch {
			case v == 0:
				fmt.Fprint(tw, "\t-")
			case r.target > 0:
				fmt.Fprintf(tw, "\t%.3f %s", v, verdict(r.met(v)))
			default:
				fmt.Fprintf(tw, "\t%.3f", v)
			}
		}
		if r.target > 0 {
			fmt.Fprint(tw, "\t"+r.targetText())
		} else {
			fmt.Fprint(tw, "\t")
		}
		for _, c := range b.cfg.concurrency {
			fmt.Fprint(tw, known(figures[r.name][c].bound))
		}
		for _, c := range b.cfg.concurrency {
			share := figures[r.name][c].share
			if share > 0 && r.shareTarget > 0 {
				fmt.Fprintf(tw, "\t%.3f %s", share, verdict(share >= r.shareTarget))
			} else {
				fmt.Fprint(tw, known(share))
			}
		}
		if r.shareTarget > 0 {
			fmt.Fprintf(tw, "\t>= %.2f", r.shareTarget)
		} else {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprintln(tw, "\t")
	}
	p99, floorP99 := map[int]summary{}, map[int]summary{}
	for _, s := range sums {
		switch {
		case s.skipped:
		case s.name == "replay":
			p99[s.concurrency] = s
		case s.name == "floor":
			floorP99[s.concurrency] = s
		}
	}
	// A replay is an HTTP request on the server's stack and more, so no
	// replay's p99 can be expected under floor's at the same concurrency.
	fmt.Fprint(tw, "replay p99 ms")
	for _, c := range b.cfg.concurrency {
		s, ok := p99[c]
		switch {
		case !ok:
			fmt.Fprint(tw, "\t-")
		case c == replayP99Clients:
			fmt.Fprintf(tw, "\t%.2f %s", ms(s.p99), verdict(s.p99 < replayP99Target))
		default:
			fmt.Fprintf(tw, "\t%.2f", ms(s.p99))
		}
	}
	fmt.Fprintf(tw, "\t< %.0f at %d clients", ms(replayP99Target), replayP99Clients)
	for _, c := range b.cfg.concurrency {
		if f, ok := floorP99[c]; ok {
			fmt.Fprintf(tw, "\tfloor p99 %.2f at %d", ms(f.p99), c)
		}
	}
	fmt.Fprintln(tw)
	tw.Flush()
	onFloor, onBare := b.firstBoundFigures()
	fmt.Fprint(b.stdout, "a first execution's highest rate by the runs, req/s (median of the rounds'):")
	for _, c := range b.cfg.concurrency {
		fmt.Fprintf(b.stdout, " %d clients: on floor (floor + ceiling) %s, on bare (bare - bare_sql + ceiling) %s;",
			c, knownRate(onFloor[c]), knownRate(onBare[c]))
	}
	fmt.Fprintln(b.stdout, " first/ceiling's, first/bare's and first/peer's bounds take the lower")
	rss, rssOK := b.serverRSS()
	rss = round(rss, 1)
	if rssOK {
		fmt.Fprintf(tw, "server_max_rss_mib\t%.1f %s\t\t< %d\t(%s)\n", rss, verdict(rss < rssTargetMiB), rssTargetMiB, b.rssNote)
	} else {
		fmt.Fprintf(tw, "server_max_rss_mib\t-\t\t< %d\t(not known: %s)\n", rssTargetMiB, b.rssNote)
	}
	tw.Flush()
	b.machineLoad.after = loadAverage()
	fmt.Fprintf(b.stdout, "machine: %d CPUs, load average (1, 5, 15 min) %s at the start, %s at the end\n",
		runtime.NumCPU(), b.machineLoad.before, b.machineLoad.after)

	if b.cfg.jsonPath == "" {
		return nil
	}
	out := jsonReport{
		Rounds: rounds, Scenarios: []jsonScenario{}, Ratios: map[string]jsonRatio{}, CPUs: runtime.NumCPU(),
		LoadBefore: b.machineLoad.before, LoadAfter: b.machineLoad.after, Server: b.serverKind(),
		ReplayP99: jsonP99{TargetMS: ms(replayP99Target), AtClients: replayP99Clients, Clients: map[string]float64{}, Floor: map[string]float64{}},
	}
	for _, s := range sums {
		js := jsonScenario{Name: s.name, Concurrency: s.concurrency, jsonRound: jsonRound{
			RPS: round(s.rps, 1), P50: ms(s.p50), P99: ms(s.p99),
			Errors: s.errors, Skipped: s.skipped, WALKBPerRequest: walKB(s.walBytes, s.walOK), CPUIdle: share(s.idle, s.idleOK),
			CPUSteal: share(s.steal, s.idleOK), CPU: cpuJSON(s.cpu), Allocs: allocsJSON(s.allocs, s.allocBytes, s.allocOK),
		}}
		var notes []string
		for _, r := range s.rounds {
			js.Rounds = append(js.Rounds, jsonRound{
				RPS: round(r.rps, 1), P50: ms(r.p50), P99: ms(r.p99), Errors: r.errors, Skipped: r.skipped,
				Note: r.note, WALKBPerRequest: walKB(r.walBytes, r.walOK), CPUIdle: share(r.idle, r.idleOK),
				CPUSteal: share(r.steal, r.idleOK), CPU: cpuJSON(r.cpu), Allocs: allocsJSON(r.allocs, r.allocBytes, r.allocOK),
				Overload: r.over, Prune: r.prune,
			})
			if r.note != "" && !slices.Contains(notes, r.note) {
				notes = append(notes, r.note)
			}
		}
		js.Note = strings.Join(notes, "; ")
		if s.name == "prune" {
			js.Prune = pruneMedians(s)
		}
		out.Scenarios = append(out.Scenarios, js)
		if s.name == "replay" && !s.skipped {
			out.ReplayP99.Clients[strconv.Itoa(s.concurrency)] = ms(s.p99)
		}
		if s.name == "floor" && !s.skipped {
			out.ReplayP99.Floor[strconv.Itoa(s.concurrency)] = ms(s.p99)
		}
	}
	for _, r := range ratios {
		jr := jsonRatio{Target: r.target, ShareTarget: r.shareTarget, Clients: map[string]float64{}, Rounds: map[string][]float64{}}
		if r.p99 {
			jr.Of = "p99"
		}
		for c, f := range figures[r.name] {
			if f.value == 0 {
				continue
			}
			k := strconv.Itoa(c)
			jr.Clients[k], jr.Rounds[k] = f.value, f.values
			if f.bound > 0 {
				if jr.Bound == nil {
					jr.Bound = map[string]float64{}
				}
				jr.Bound[k] = f.bound
			}
			if f.share > 0 {
				if jr.Share == nil {
					jr.Share = map[string]float64{}
				}
				jr.Share[k] = f.share
			}
		}
		if len(jr.Clients) > 0 {
			out.Ratios[r.name] = jr
		}
	}
	out.FirstBoundRPS = jsonFirstBound{OnFloor: byClients(onFloor), OnBare: byClients(onBare)}
	if rssOK {
		out.ServerMaxRSSMiB = &rss
		out.ServerRSSOf = b.rssNote
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(b.cfg.jsonPath, append(data, '\n'), 0o644)
}

// walKB is WAL bytes per request in KB for the JSON file, nil if unknown.
func walKB(bytes float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	kb := round(bytes/1024, 2)
	return &kb
}

// share is a fraction for the JSON file, rounded; nil when not known.
func share(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	r := round(v, 3)
	return &r
}

// serverKind says what served the run.
func (b *bench) serverKind() string {
	if b.cfg.url != "" {
		return "url " + b.cfg.url
	}
	return b.cfg.server
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

// jsonReport is the --json file, shaped so that runs can be compared.
type jsonReport struct {
	// Rounds is how many rounds ran; the figures are their medians.
	Rounds    int            `json:"rounds"`
	Scenarios []jsonScenario `json:"scenarios"`
	// Ratios by name, each at every concurrency measured.
	Ratios map[string]jsonRatio `json:"ratios"`
	// ReplayP99 is the median of the rounds' replay p99 at every
	// concurrency, with its target.
	ReplayP99 jsonP99 `json:"replay_p99_ms"`
	// FirstBoundRPS is the highest rate of first executions the runs
	// allow, built on floor and on bare, at every concurrency.
	FirstBoundRPS   jsonFirstBound `json:"first_bound_rps"`
	ServerMaxRSSMiB *float64       `json:"server_max_rss_mib,omitempty"`
	ServerRSSOf     string         `json:"server_rss_of,omitempty"`
	// Server is process, inprocess or the --url.
	Server     string  `json:"server"`
	CPUs       int     `json:"cpus"`
	LoadBefore loadAvg `json:"load_average_before"`
	LoadAfter  loadAvg `json:"load_average_after"`
}

type jsonRatio struct {
	Target float64 `json:"target,omitempty"`
	// Of is "p99" for a ratio of p99s, where lower is better and Target is
	// the most it may be; absent for a ratio of req/s, where Target is the
	// least.
	Of string `json:"of,omitempty"`
	// Clients maps the number of clients to the ratio: the median of the
	// ratios computed within each round.
	Clients map[string]float64 `json:"clients"`
	// Rounds maps the number of clients to the ratio in each round that
	// had the runs it needs.
	Rounds map[string][]float64 `json:"rounds"`
	// Bound maps the number of clients to the highest value the ratio
	// can have by the runs' own figures (absent without the runs it needs),
	// the median of the rounds' bounds.
	Bound map[string]float64 `json:"bound,omitempty"`
	// Share maps the number of clients to the median of the rounds'
	// ratio / bound.
	Share map[string]float64 `json:"share,omitempty"`
	// ShareTarget is the share of the bound the ratio should reach.
	ShareTarget float64 `json:"share_target,omitempty"`
}

type jsonFirstBound struct {
	// OnFloor is 1/(1/floor + 1/ceiling), the median of the rounds'.
	OnFloor map[string]float64 `json:"on_floor"`
	// OnBare is 1/(1/bare - 1/bare_sql + 1/ceiling) likewise.
	OnBare map[string]float64 `json:"on_bare"`
}

// byClients keys m by the number of clients as the JSON file does.
func byClients(m map[int]float64) map[string]float64 {
	out := map[string]float64{}
	for c, v := range m {
		out[strconv.Itoa(c)] = v
	}
	return out
}

func knownRate(v float64) string {
	if v > 0 {
		return fmt.Sprintf("%.0f", v)
	}
	return "-"
}

type jsonP99 struct {
	TargetMS  float64 `json:"target_ms"`
	AtClients int     `json:"at_clients"`
	// Clients maps the number of clients to the median of the rounds' p99.
	Clients map[string]float64 `json:"clients"`
	// Floor is floor's p99 likewise: what an HTTP request alone takes at
	// its 99th percentile on this machine, below which no replay's can be.
	Floor map[string]float64 `json:"floor,omitempty"`
}

type jsonScenario struct {
	Name        string `json:"name"`
	Concurrency int    `json:"concurrency"`
	// The medians of the rounds' figures (Note: every round's notes).
	jsonRound
	// Rounds are the runs the medians above are taken of, in round order.
	Rounds []jsonRound `json:"rounds"`
}

// jsonRound is one run of a scenario at one concurrency.
type jsonRound struct {
	RPS     float64 `json:"rps"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	Errors  int     `json:"errors"`
	Skipped bool    `json:"skipped,omitempty"`
	Note    string  `json:"note,omitempty"`
	// WAL written per request over the measured window, the whole
	// server's (absent when it could not be read).
	WALKBPerRequest *float64 `json:"wal_kb_per_request,omitempty"`
	// CPUIdle is the share of the machine's CPU time left idle or waiting
	// for I/O over the measured window, from 0 to 1 (absent when it could
	// not be read).
	CPUIdle *float64 `json:"cpu_idle,omitempty"`
	// CPUSteal is the share of the machine's CPU time the hypervisor gave
	// to other guests over the measured window, from 0 to 1 (absent when
	// it could not be read): the machine's speed moving under the run.
	CPUSteal *float64 `json:"cpu_steal,omitempty"`
	// CPU is the CPU time per request in microseconds by part: client
	// (the load generator), oncecall, baseline, postgres, other (the rest
	// of the machine's busy time) and total (the machine's busy time);
	// absent when it could not be read.
	CPU map[string]float64 `json:"cpu_us_per_request,omitempty"`
	// Allocs is what oncecall allocated on its heap per request it
	// answered over the run, warm-up included (absent when it could not be
	// read or another server answered the run).
	Allocs *jsonAllocs `json:"oncecall_allocs_per_request,omitempty"`
	// Overload is an overload run's own figures (a round's only).
	Overload *overloadFigures `json:"overload,omitempty"`
	// Prune is a prune run's own figures (a round's, or the median of the
	// rounds').
	Prune *pruneFigures `json:"prune,omitempty"`
}

// jsonAllocs is oncecall's heap allocations per request: objects and bytes.
type jsonAllocs struct {
	Objects float64 `json:"objects"`
	Bytes   float64 `json:"bytes"`
}

// allocsJSON is jsonAllocs rounded; nil when not known.
func allocsJSON(objects, bytes float64, ok bool) *jsonAllocs {
	if !ok {
		return nil
	}
	return &jsonAllocs{Objects: round(objects, 1), Bytes: round(bytes, 0)}
}

// cpuOrder is the order in which the parts of a request's CPU time are
// printed.
var cpuOrder = []string{"client", "oncecall", "baseline", "postgres", "other", "total"}

// cpuColumns are the parts cpu holds, in cpuOrder.
func cpuColumns(cpu map[string]float64) []string {
	var out []string
	for _, name := range cpuOrder {
		if _, ok := cpu[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// reportCPU prints what a request cost in CPU time, by process.
func (b *bench) reportCPU(sums []summary) {
	present := map[string]float64{} // the parts any scenario has
	for _, s := range sums {
		maps.Copy(present, s.cpu)
	}
	columns := cpuColumns(present)
	if len(columns) == 0 {
		return
	}
	fmt.Fprintln(b.stdout)
	fmt.Fprintln(b.stdout, "CPU time per request in µs, the median of the rounds': client is the load generator (with the SQL-only scenarios' pgx side), other the rest of the machine's busy time, total the machine's")
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scenario\tclients\t%s\t\n", strings.Join(columns, "\t"))
	for _, s := range sums {
		if s.cpu == nil {
			continue
		}
		cells := make([]string, len(columns))
		for i, name := range columns {
			cells[i] = "-"
			if v, ok := s.cpu[name]; ok {
				cells[i] = fmt.Sprintf("%.0f", v)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", s.name, s.concurrency, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

// cpuJSON rounds a request's CPU time by part to a tenth of a microsecond.
func cpuJSON(cpu map[string]float64) map[string]float64 {
	if cpu == nil {
		return nil
	}
	out := make(map[string]float64, len(cpu))
	for name, v := range cpu {
		out[name] = round(v, 1)
	}
	return out
}

// loadAvg is the 1, 5 and 15 minute load average (Linux; zeros elsewhere).
type loadAvg [3]float64

func (l loadAvg) String() string { return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2]) }

func loadAverage() loadAvg {
	var l loadAvg
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(data))
	for i := range min(3, len(f)) {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}
