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
type ratio struct {
	name, num, den string
	target         float64
}

var ratios = []ratio{
	{"first/ceiling", "first", "ceiling", 0.8},
	{"first/bare", "first", "bare", 0.9},
	{"replay/select", "replay", "select", 0.6},
	{"grown/first", "grown", "first", 0.9},
	{"first/ceiling_tx", "first", "ceiling_tx", 0},
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

// ratioValues computes every ratio the runs allow, at every concurrency.
func (b *bench) ratioValues() map[string]map[int]float64 {
	out := map[string]map[int]float64{}
	for _, r := range ratios {
		for _, c := range b.cfg.concurrency {
			num, ok1 := b.find(r.num, c)
			den, ok2 := b.find(r.den, c)
			if !ok1 || !ok2 {
				continue
			}
			if out[r.name] == nil {
				out[r.name] = map[int]float64{}
			}
			out[r.name][c] = round(num.rps/den.rps, 3)
		}
	}
	return out
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

	values := b.ratioValues()
	fmt.Fprintln(b.stdout)
	tw = tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ratio")
	for _, c := range b.cfg.concurrency {
		fmt.Fprintf(tw, "\t%d clients", c)
	}
	fmt.Fprintln(tw, "\ttarget\t")
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
			fmt.Fprintf(tw, "\t>= %.2f\t\n", r.target)
		} else {
			fmt.Fprint(tw, "\t\t\n")
		}
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
