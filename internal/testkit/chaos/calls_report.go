package chaos

import (
	"fmt"
	"strings"
)

// CallsReport is what a calls run found.
type CallsReport struct {
	// Seed is the run's seed.
	Seed uint64
	// Calls were played; ToolCalls counts the tool calls they sent
	// (every delivery of every invocation); Platforms the platforms that
	// answered; Faults the faults injected (kills, database restarts,
	// provider faults applied).
	Calls, ToolCalls, Platforms, Faults int
	// SpokenFalse: claims heard that do not hold (a confirmation whose
	// effect is not there, a "not done" whose effect is; each counted once
	// per intent). Duplicates: effects beyond the intents. Lost: intents
	// confirmed without their effect. Unsettled: intents still pending (or
	// never answered) at the end. Lockouts: 503 answers to a call while
	// another call of the same tenant was slow.
	SpokenFalse, Duplicates, Lost, Unsettled, Lockouts int

	// Answers counts the answers heard, by platform.
	Answers map[string]int
	// Intents, and how they ended for the caller.
	Intents, Confirmed, Rejected, Skipped int
	// Kills, PGRestarts and ProviderFaults make up Faults.
	Kills, PGRestarts, ProviderFaults int
	// Unfinished and NeedsOperator are actions after the settle.
	Unfinished, NeedsOperator int

	// Problems describes the first violations; Histories are the whole
	// histories of the calls with a violation.
	Problems  []string
	Histories []string
	// Violating lists the calls with a violation.
	Violating []int
}

// OK reports whether nothing false was said, nothing doubled or lost,
// everything settled and no call locked out.
func (r CallsReport) OK() bool {
	return r.SpokenFalse == 0 && r.Duplicates == 0 && r.Lost == 0 && r.Unsettled == 0 && r.Lockouts == 0
}

// String is the one summary line.
func (r CallsReport) String() string {
	return fmt.Sprintf("calls: calls=%d tool_calls=%d platforms=%d faults=%d spoken_false=%d duplicates=%d lost=%d unsettled=%d lockouts=%d",
		r.Calls, r.ToolCalls, r.Platforms, r.Faults, r.SpokenFalse, r.Duplicates, r.Lost, r.Unsettled, r.Lockouts)
}

// Details is the line of further figures.
func (r CallsReport) Details() string {
	var per []string
	for _, p := range callPlatforms {
		per = append(per, fmt.Sprintf("%s=%d", p, r.Answers[p]))
	}
	return fmt.Sprintf("calls: seed=%d answers %s intents=%d confirmed=%d rejected=%d skipped=%d kills=%d pg_restarts=%d provider_faults=%d unfinished_actions=%d needs_operator=%d",
		r.Seed, strings.Join(per, " "), r.Intents, r.Confirmed, r.Rejected, r.Skipped, r.Kills, r.PGRestarts, r.ProviderFaults, r.Unfinished, r.NeedsOperator)
}

func (r *CallsReport) problem(format string, args ...any) {
	if len(r.Problems) < 40 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}
