package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// history renders the call's whole history: the script, then every
// request and answer with the claims it made and which of them were false.
func (c *callScript) history(why []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "call %d on %s, call id %q (%s), tenant %d, caller %s %s", c.N, c.Platform, c.CallID, c.Shape, c.Tenant.N, c.Person.Phone, c.Person.ID)
	if c.Partner != nil {
		fmt.Fprintf(&b, ", with call %d", c.Partner.N)
	}
	if c.MadeUp != "" {
		fmt.Fprintf(&b, ", made-up action_id %q", c.MadeUp)
	}
	if c.Parallel {
		b.WriteString(", parallel")
	}
	b.WriteString("\n")
	for _, w := range why {
		b.WriteString("  VIOLATION: " + w + "\n")
	}
	for _, in := range c.Intents {
		fmt.Fprintf(&b, "  intent %d: %s\n", in.N, in.describe())
	}
	if c.play == nil {
		return b.String()
	}
	events := slices.Clone(c.play.events)
	slices.SortStableFunc(events, func(a, b *callEvent) int { return a.At.Compare(b.At) })
	start := time.Time{}
	if len(events) > 0 {
		start = events[0].At
	}
	for _, e := range events {
		fmt.Fprintf(&b, "  +%6.3fs intent %d %s", e.At.Sub(start).Seconds(), e.Intent, e.Step)
		if e.Tool != "" {
			fmt.Fprintf(&b, " %s %s", e.Tool, e.Args)
		}
		if e.ToolCallID != "" {
			fmt.Fprintf(&b, " [%s]", e.ToolCallID)
		}
		if e.Status != 0 {
			fmt.Fprintf(&b, " -> %d in %.3fs", e.Status, e.Took.Seconds())
		}
		if e.Err != "" {
			fmt.Fprintf(&b, " error: %s", e.Err)
		}
		if e.Lockout {
			b.WriteString(" LOCKOUT")
		}
		b.WriteString("\n")
		if a := e.Answer; a != nil {
			fmt.Fprintf(&b, "      %s action_id=%s reason=%s current=%s say=%q details=%s\n", a.Outcome, a.ActionID, a.Reason, a.Current, a.Say, a.Details)
		}
		for _, cl := range e.Claims {
			fmt.Fprintf(&b, "      claims: %s\n", cl)
		}
		for _, f := range e.False {
			fmt.Fprintf(&b, "      FALSE: %s\n", f)
		}
	}
	return b.String()
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// describe says what the intent wants.
func (in *callIntent) describe() string {
	var s []string
	s = append(s, in.Kind)
	if in.Slot != nil {
		s = append(s, "slot "+in.Slot.ID+" at "+in.Slot.Start.UTC().Format(time.RFC3339))
	}
	if in.At != nil {
		s = append(s, "the service at "+in.At.Start.UTC().Format(time.RFC3339))
	}
	if in.Alternative != nil {
		s = append(s, "else slot "+in.Alternative.ID)
	}
	if in.ChangeTo != nil {
		s = append(s, "then changes their mind to slot "+in.ChangeTo.ID)
	}
	if in.Contended {
		s = append(s, "contended")
	}
	if in.Of != nil {
		s = append(s, fmt.Sprintf("of intent %d's booking", in.Of.N))
	} else if in.needsBooking() && in.Call.Booking != nil {
		s = append(s, "of the booking "+in.Call.Booking.ID)
	}
	if in.PI != nil {
		s = append(s, fmt.Sprintf("payment intent %s (%d)", in.PI.ID, in.PI.Amount))
	}
	if in.Token != "" {
		s = append(s, "token "+in.Token)
	}
	if in.Ref != "" {
		s = append(s, "ref "+in.Ref)
	}
	if in.Delta != 0 {
		s = append(s, fmt.Sprintf("delta %d", in.Delta))
	}
	if in.Change {
		s = append(s, "then changes it")
	}
	return strings.Join(s, ", ")
}
