package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ratio is one figure of merit: rps of num over rps of den at the same
// concurrency, and the target it should meet (0: reported, no target).
// bound, when set, is the highest value the ratio can have on this machine
// by the runs' own figures (see bounds).
type ratio struct {
	name, num, den string
	target         float64
	bound          func(rps func(string) float64) float64
}

var ratios = []ratio{
	{"first/ceiling", "first", "ceiling", 0.8, firstCeilingBound},
	{"first/bare", "first", "bare", 0.9, firstBareBound},
	{"replay/select", "replay", "select", 0.6, replaySelectBound},
	{"grown/first", "grown", "first", 0.9, nil},
	{"first/ceiling_tx", "first", "ceiling_tx", 0, nil},
}

// The bounds take a saturated machine, where what requests cost in CPU
// adds up: a scenario at x req/s costs 1/x of the machine per request.
// A first execution costs at least an HTTP request on the server's stack
// (floor: read, authenticated, decoded, answered, the client included) plus
// its statement (ceiling); a replay at least floor plus its read (select).
// bare is floor's work plus bare's statement (bare_sql), so a first
// execution costs at least bare minus bare_sql plus ceiling. A bound is 0
// (not known) when a run it needs is missing.

func firstCeilingBound(rps func(string) float64) float64 {
	return costRatio(rps("ceiling"), rps("floor"), rps("ceiling"))
}

func firstBareBound(rps func(string) float64) float64 {
	bare, bareSQL, ceiling := rps("bare"), rps("bare_sql"), rps("ceiling")
	if bare == 0 || bareSQL == 0 || ceiling == 0 {
		return 0
	}
	return round((1/bare)/(max(1/bare-1/bareSQL, 0)+1/ceiling), 3)
}

func replaySelectBound(rps func(string) float64) float64 {
	return costRatio(rps("select"), rps("floor"), rps("select"))
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
	if r.note != "" {
		s += " (" + r.note + ")"
	}
	return s
}

// find returns the result of a scenario at concurrency c.
func (b *bench) find(name string, c int) (result, bool) {
	for _, r := range b.results {
		if r.name == name && r.concurrency == c && !r.skipped && r.rps > 0 {
			return r, true
		}
	}
	return result{}, false
}

// ratioValues computes every ratio the runs allow, at every concurrency,
// and every bound.
func (b *bench) ratioValues() (values, bounds map[string]map[int]float64) {
	values, bounds = map[string]map[int]float64{}, map[string]map[int]float64{}
	put := func(m map[string]map[int]float64, name string, c int, v float64) {
		if m[name] == nil {
			m[name] = map[int]float64{}
		}
		m[name][c] = v
	}
	for _, r := range ratios {
		for _, c := range b.cfg.concurrency {
			rps := func(name string) float64 {
				res, _ := b.find(name, c)
				return res.rps
			}
			if num, den := rps(r.num), rps(r.den); num > 0 && den > 0 {
				put(values, r.name, c, round(num/den, 3))
			}
			if r.bound != nil {
				if v := r.bound(rps); v > 0 {
					put(bounds, r.name, c, v)
				}
			}
		}
	}
	return values, bounds
}

// report prints the table, the ratios at every concurrency against their
// targets, the server's memory and the machine's load, and writes the JSON
// file if asked.
func (b *bench) report() error {
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tclients\treq/s\tp50 ms\tp99 ms\terrors\tWAL KB/req\t")
	for _, r := range b.results {
		if r.skipped {
			fmt.Fprintf(tw, "%s\t%d\tskipped\t\t\t\t\t\n", r.name, r.concurrency)
			continue
		}
		wal := "-"
		if r.walOK {
			wal = fmt.Sprintf("%.2f", r.walBytes/1024)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%d\t%s\t\n", r.name, r.concurrency, r.rps, ms(r.p50), ms(r.p99), r.errors, wal)
	}
	tw.Flush()
	for _, r := range b.results {
		if r.note != "" {
			fmt.Fprintf(b.stdout, "note: %s at %d clients: %s\n", r.name, r.concurrency, r.note)
		}
	}

	values, bounds := b.ratioValues()
	fmt.Fprintln(b.stdout)
	tw = tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ratio")
	for _, c := range b.cfg.concurrency {
		fmt.Fprintf(tw, "\t%d clients", c)
	}
	fmt.Fprint(tw, "\ttarget")
	for _, c := range b.cfg.concurrency {
		fmt.Fprintf(tw, "\tbound %d", c)
	}
	fmt.Fprintln(tw, "\t")
	for _, r := range ratios {
		fmt.Fprint(tw, r.name)
		for _, c := range b.cfg.concurrency {
			v, ok := values[r.name][c]
			switch {
			case !ok:
				fmt.Fprint(tw, "\t-")
			case r.target > 0:
				fmt.Fprintf(tw, "\t%.3f %s", v, verdict(v >= r.target))
			default:
				fmt.Fprintf(tw, "\t%.3f", v)
			}
		}
		if r.target > 0 {
			fmt.Fprintf(tw, "\t>= %.2f", r.target)
		} else {
			fmt.Fprint(tw, "\t")
		}
		for _, c := range b.cfg.concurrency {
			if v, ok := bounds[r.name][c]; ok {
				fmt.Fprintf(tw, "\t%.3f", v)
			} else {
				fmt.Fprint(tw, "\t-")
			}
		}
		fmt.Fprintln(tw, "\t")
	}
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
		Scenarios: []jsonScenario{}, Ratios: map[string]jsonRatio{}, CPUs: runtime.NumCPU(),
		LoadBefore: b.machineLoad.before, LoadAfter: b.machineLoad.after, Server: b.serverKind(),
	}
	for _, r := range b.results {
		js := jsonScenario{
			Name: r.name, Concurrency: r.concurrency, RPS: round(r.rps, 1), P50: ms(r.p50), P99: ms(r.p99),
			Errors: r.errors, Skipped: r.skipped, Note: r.note,
		}
		if r.walOK {
			kb := round(r.walBytes/1024, 2)
			js.WALKBPerRequest = &kb
		}
		out.Scenarios = append(out.Scenarios, js)
	}
	for _, r := range ratios {
		if v := values[r.name]; v != nil {
			jr := jsonRatio{Target: r.target, Clients: map[string]float64{}}
			for c, x := range v {
				jr.Clients[strconv.Itoa(c)] = x
			}
			for c, x := range bounds[r.name] {
				if jr.Bound == nil {
					jr.Bound = map[string]float64{}
				}
				jr.Bound[strconv.Itoa(c)] = x
			}
			out.Ratios[r.name] = jr
		}
	}
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
	Scenarios []jsonScenario `json:"scenarios"`
	// Ratios by name, each at every concurrency measured.
	Ratios          map[string]jsonRatio `json:"ratios"`
	ServerMaxRSSMiB *float64             `json:"server_max_rss_mib,omitempty"`
	ServerRSSOf     string               `json:"server_rss_of,omitempty"`
	// Server is process, inprocess or the --url.
	Server     string  `json:"server"`
	CPUs       int     `json:"cpus"`
	LoadBefore loadAvg `json:"load_average_before"`
	LoadAfter  loadAvg `json:"load_average_after"`
}

type jsonRatio struct {
	Target float64 `json:"target,omitempty"`
	// Clients maps the number of clients to the ratio.
	Clients map[string]float64 `json:"clients"`
	// Bound maps the number of clients to the highest value the ratio
	// can have by the run's own figures (absent without the runs it needs).
	Bound map[string]float64 `json:"bound,omitempty"`
}

type jsonScenario struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency"`
	RPS         float64 `json:"rps"`
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	Errors      int     `json:"errors"`
	Skipped     bool    `json:"skipped,omitempty"`
	Note        string  `json:"note,omitempty"`
	// WAL written per request over the measured window, the whole
	// server's (absent when it could not be read).
	WALKBPerRequest *float64 `json:"wal_kb_per_request,omitempty"`
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
