package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// ratio is one figure of merit: rps of num over rps of den at the highest
// concurrency, and the target it should meet.
type ratio struct {
	name, num, den string
	target         float64
}

var ratios = []ratio{
	{"first/ceiling", "first", "ceiling", 0.7},
	{"first/ceiling_tx", "first", "ceiling_tx", 1.3},
	{"first/bare", "first", "bare", 0.75},
	{"replay/select", "replay", "select", 0.5},
	{"grown/first", "grown", "first", 0.9},
}

// Absolute targets.
const (
	replayP99Target = 5 * time.Millisecond
	rssTargetMiB    = 150
)

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

// ratioValues computes the ratios that the runs allow, at the highest
// concurrency.
func (b *bench) ratioValues() (map[string]float64, int) {
	top := slices.Max(b.cfg.concurrency)
	out := map[string]float64{}
	for _, r := range ratios {
		num, ok1 := b.find(r.num, top)
		den, ok2 := b.find(r.den, top)
		if ok1 && ok2 {
			out[r.name] = round(num.rps/den.rps, 3)
		}
	}
	return out, top
}

// report prints the table, the ratios against their targets and the
// server's memory, and writes the JSON file if asked.
func (b *bench) report() error {
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tclients\treq/s\tp50 ms\tp99 ms\terrors\t")
	for _, r := range b.results {
		if r.skipped {
			fmt.Fprintf(tw, "%s\t%d\tskipped\t\t\t\t\n", r.name, r.concurrency)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%d\t\n", r.name, r.concurrency, r.rps, ms(r.p50), ms(r.p99), r.errors)
	}
	tw.Flush()
	for _, r := range b.results {
		if r.note != "" {
			fmt.Fprintf(b.stdout, "note: %s at %d clients: %s\n", r.name, r.concurrency, r.note)
		}
	}

	values, top := b.ratioValues()
	fmt.Fprintf(b.stdout, "\nat %d clients\n", top)
	tw = tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', 0)
	for _, r := range ratios {
		v, ok := values[r.name]
		if !ok {
			fmt.Fprintf(tw, "%s\t-\ttarget >= %.2f\tnot measured\n", r.name, r.target)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.3f\ttarget >= %.2f\t%s\n", r.name, v, r.target, verdict(v >= r.target))
	}
	if rp, ok := b.find("replay", top); ok {
		fmt.Fprintf(tw, "replay p99\t%.2f ms\ttarget < %d ms\t%s\n", ms(rp.p99), replayP99Target/time.Millisecond, verdict(rp.p99 < replayP99Target))
	}
	rss, rssOK := b.serverRSS()
	if rssOK {
		rss = round(rss, 1)
		fmt.Fprintf(tw, "server_max_rss_mib\t%.1f\ttarget < %d\t%s (%s)\n", rss, rssTargetMiB, verdict(rss < rssTargetMiB), b.rssNote)
	} else {
		fmt.Fprintf(tw, "server_max_rss_mib\t-\ttarget < %d\tnot known: %s\n", rssTargetMiB, b.rssNote)
	}
	tw.Flush()

	if b.cfg.jsonPath == "" {
		return nil
	}
	out := jsonReport{Scenarios: []jsonScenario{}, Ratios: values}
	for _, r := range b.results {
		out.Scenarios = append(out.Scenarios, jsonScenario{
			Name: r.name, Concurrency: r.concurrency, RPS: round(r.rps, 1), P50: ms(r.p50), P99: ms(r.p99),
			Errors: r.errors, Skipped: r.skipped, Note: r.note,
		})
	}
	if rssOK {
		out.ServerMaxRSSMiB = &rss
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(b.cfg.jsonPath, append(data, '\n'), 0o644)
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

// jsonReport is the --json file, shaped so that runs can be compared.
type jsonReport struct {
	Scenarios       []jsonScenario     `json:"scenarios"`
	Ratios          map[string]float64 `json:"ratios"`
	ServerMaxRSSMiB *float64           `json:"server_max_rss_mib,omitempty"`
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
}
