package console

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/schedule"
)

// evidenceRun is a run of the same finding about a step: twenty
// identical inconclusive lookups read as one line, their raw detail one
// click away.
type evidenceRun struct {
	Kind, Step, Finding string
	N                   int
	First, Last         time.Time
	Raw                 []event
	clock               schedule.Clock
}

// kindWords say what an evidence event's kind means.
var kindWords = map[string][2]string{ // one, many
	"inconclusive":   {"check that settled nothing", "checks that settled nothing"},
	"evidence":       {"lookup that found the answer", "lookups that found the answer"},
	"needs_operator": {"check after which it went to a person", "checks after which it went to a person"},
	"lease_expired":  {"worker that stopped before finishing", "workers that stopped before finishing"},
	"nudged":         {"notice from the provider", "notices from the provider"},
	"waiting":        {"check while the provider had not decided", "checks while the provider had not decided"},
}

// Summary says the run in words: "20 checks that settled nothing, Thu 12
// Mar 2026, 08:02:10 – 08:05:40 GMT: not found yet".
func (r evidenceRun) Summary() string {
	what := r.Kind
	if w, ok := kindWords[r.Kind]; ok {
		what = w[0]
		if r.N > 1 {
			what = w[1]
		}
	}
	when := local(r.First, r.clock)
	if r.N > 1 {
		last := r.Last.In(r.clock.Loc)
		clock := last.Format("15:04:05 MST")
		if r.clock.Locale == schedule.EnUS {
			clock = last.Format("3:04:05 PM MST")
		}
		if last.YearDay() != r.First.In(r.clock.Loc).YearDay() {
			clock = local(r.Last, r.clock)
		}
		when += " – " + clock
	}
	s := fmt.Sprintf("%d %s, %s", r.N, what, when)
	if r.Finding != "" {
		s += ": " + r.Finding
	}
	return s
}

// summarise groups consecutive evidence events of the same kind, step and
// finding.
func summarise(events []oncecall.Event, clock schedule.Clock) []evidenceRun {
	var out []evidenceRun
	for _, e := range events {
		var d struct {
			Error       string `json:"error"`
			ProviderRef string `json:"provider_ref"`
			RejectCode  string `json:"reject_code"`
			State       string `json:"state"`
		}
		json.Unmarshal(e.Detail, &d) //nolint:errcheck // a detail of another shape has no finding
		finding := d.Error
		switch {
		case d.ProviderRef != "":
			finding = "the provider holds it as " + d.ProviderRef
		case d.RejectCode != "":
			finding = "the provider refused it (" + d.RejectCode + ")"
		}
		ev := event{Event: e, Text: compact(e.Detail)}
		if n := len(out); n > 0 && out[n-1].Kind == e.Kind && out[n-1].Step == e.Step && out[n-1].Finding == finding {
			out[n-1].N++
			out[n-1].Last = e.At
			out[n-1].Raw = append(out[n-1].Raw, ev)
			continue
		}
		out = append(out, evidenceRun{Kind: e.Kind, Step: e.Step, Finding: finding, N: 1, First: e.At, Last: e.At, Raw: []event{ev}, clock: clock})
	}
	return out
}
