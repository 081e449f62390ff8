package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The audit of speech: once the run has settled, every claim of every
// answer is checked against the final state (oncecall's tables and the
// providers' ledgers), allowing for later steps of the same caller (a
// booking moved or cancelled afterwards), and every intent's effects are
// counted. It is a function of the world, the histories and the state, so
// a test can hand it a fake server's state.

// judgeCalls audits the played calls of w against the settled state t.
// Every played call's history is rendered when all is set (a replay),
// else only those of the calls with a violation.
func judgeCalls(w *callWorld, t callsTruth, all bool) CallsReport {
	j := &speechAudit{w: w, t: t, r: CallsReport{Answers: map[string]int{}, Unfinished: t.Unfinished, NeedsOperator: t.NeedsOperator}}
	j.index()
	for _, c := range w.Calls {
		if c.play == nil {
			continue
		}
		j.r.Calls++
		j.call(c)
	}
	j.unattributed()
	for _, c := range w.Calls {
		if j.bad[c.N] {
			j.r.Violating = append(j.r.Violating, c.N)
		}
		if j.bad[c.N] || (all && c.play != nil) {
			h := c.history(j.why[c.N])
			if o := c.Partner; o != nil && !j.bad[o.N] && !all {
				// The call it ran with, which may explain it.
				h += "  the call it ran with:\n" + indent(o.history(nil))
			}
			j.r.Histories = append(j.r.Histories, h)
		}
	}
	return j.r
}

type speechAudit struct {
	w *callWorld
	t callsTruth
	r CallsReport
	// owner names each caller's customer id; people by customer id.
	people map[string][]*callScript
	// changes: appointment -> the times a move or cancel of it was asked;
	// movesTo: customer/slot -> the times a move there was asked.
	changes map[string][]time.Time
	movesTo map[string][]time.Time
	// requests: intent -> the times the model asked its tool with other
	// arguments (an amended note or callback).
	byToken   map[string]*callIntent
	attribute map[string]bool // effects attributed to an intent, by kind/ref
	bad       map[int]bool
	why       map[int][]string
}

// customerOf is the customer id of a call's caller.
func (j *speechAudit) customerOf(c *callScript) string {
	if c.Person.Seeded {
		return c.Person.ID
	}
	if c.play != nil && c.play.customer != "" {
		return c.play.customer
	}
	for _, cu := range j.t.Customers {
		if cu.Phone == c.Person.Phone {
			return cu.ID
		}
	}
	return ""
}

func (j *speechAudit) index() {
	j.people, j.changes, j.movesTo = map[string][]*callScript{}, map[string][]time.Time{}, map[string][]time.Time{}
	j.byToken, j.attribute, j.bad, j.why = map[string]*callIntent{}, map[string]bool{}, map[int]bool{}, map[int][]string{}
	for _, c := range j.w.Calls {
		for _, in := range c.Intents {
			if in.Token != "" {
				j.byToken[in.Token] = in
			}
		}
		if c.play == nil {
			continue
		}
		cust := j.customerOf(c)
		j.people[cust] = append(j.people[cust], c)
		for _, e := range c.play.events {
			if e.Tool != "reschedule_appointment" && e.Tool != "cancel_appointment" {
				continue
			}
			var args ordered
			if err := args.UnmarshalJSON(e.Args); err != nil {
				continue
			}
			appt := normID(args.str("appointment_id"))
			j.changes[appt] = append(j.changes[appt], e.At)
			if e.Tool == "reschedule_appointment" {
				slot := normID(args.str("slot_id"))
				j.movesTo[cust+"/"+slot] = append(j.movesTo[cust+"/"+slot], e.At)
			}
		}
	}
}

// after reports whether one of times is after at.
func after(times []time.Time, at time.Time) bool {
	return slices.ContainsFunc(times, func(t time.Time) bool { return t.After(at) })
}

// flag marks call c as violating, with why.
func (j *speechAudit) flag(c *callScript, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	j.bad[c.N] = true
	j.why[c.N] = append(j.why[c.N], msg)
	j.r.problem("call %d (%s %s): %s", c.N, c.Platform, c.CallID, msg)
}

// call judges one call: its claims, then each intent's effects.
func (j *speechAudit) call(c *callScript) {
	p := c.play
	for _, e := range p.events {
		if e.Answer != nil {
			j.r.Answers[c.Platform]++
		}
		if e.Lockout {
			j.r.Lockouts++
			j.flag(c, "a 503 to %s while another call of the tenant was slow", e.Tool)
		}
	}
	for _, in := range c.Intents {
		j.intent(c, in)
	}
}

// intent judges the claims heard for one intent and counts its effects.
func (j *speechAudit) intent(c *callScript, in *callIntent) {
	p := c.play
	ip := p.intents[in.N]
	j.r.Intents++
	var done, refused bool
	falseSeen := map[string]bool{}
	// booked: when the model heard a booking (or a move) of each slot.
	booked := map[string][]time.Time{}
	for _, e := range p.events {
		for _, cl := range e.Claims {
			if e.Intent == in.N && (cl.What == claimBooked || cl.What == claimMoved) {
				booked[cl.Slot] = append(booked[cl.Slot], e.At)
			}
		}
	}
	for _, e := range p.events {
		if e.Intent != in.N {
			continue
		}
		for _, cl := range e.Claims {
			if positive[cl.What] {
				done = true
			} else if cl.What != claimNotYet {
				refused = true
			}
			if why := j.check(c, cl, e.At, booked); why != "" {
				e.False = append(e.False, cl.What+": "+why)
				if key := cl.String(); !falseSeen[key] {
					falseSeen[key] = true
					j.r.SpokenFalse++
					j.flag(c, "intent %d (%s): heard %q, but %s", in.N, in.Kind, cl.String(), why)
				}
			}
		}
	}
	switch {
	case ip.skipped != "":
		j.r.Skipped++
		if ip.skipped != skippedNoBooking {
			// The call could not go on: the caller's intent never got an answer.
			j.r.Unsettled++
			j.flag(c, "intent %d (%s) was never asked: %s", in.N, in.Kind, ip.skipped)
		}
		return
	case done:
		j.r.Confirmed++
	case refused:
		j.r.Rejected++
	default:
		j.r.Unsettled++
		j.flag(c, "intent %d (%s) is still pending (or never answered) at the end", in.N, in.Kind)
	}
	n, what := j.effects(c, in)
	if n > 1 {
		j.r.Duplicates += n - 1
		j.flag(c, "intent %d (%s) has %d effects: %s", in.N, in.Kind, n, what)
	}
	if done && n == 0 {
		j.r.Lost++
		j.flag(c, "intent %d (%s) was confirmed, but its effect is not there", in.N, in.Kind)
	}
}

// skippedNoBooking is why a move or a cancel of a booking the call did not
// make is not played: not a failure of its own.
const skippedNoBooking = "no booking to act on"

// positive are the claims that the effect happened.
var positive = map[string]bool{
	claimBooked: true, claimMoved: true, claimCancelled: true, claimCharged: true, claimSent: true,
	claimNoted: true, claimPoints: true, claimCallback: true, claimCustomer: true,
}

// effects counts the effects of an intent in the settled state (for a move
// or a cancel, 1 when the booking is as asked and 0 otherwise) and lists
// them.
func (j *speechAudit) effects(c *callScript, in *callIntent) (int, string) {
	cust := j.customerOf(c)
	var refs []string
	count := func(es []truthEffect, match func(truthEffect) bool, kind string) int {
		n := 0
		for _, e := range es {
			if match(e) {
				n++
				refs = append(refs, e.Ref)
				j.attribute[kind+"/"+e.Ref] = true
			}
		}
		return n
	}
	byToken := func(e truthEffect) bool { return e.Token == in.Token }
	switch in.Kind {
	case wantCreate:
		n := 0
		for _, cu := range j.t.Customers {
			if cu.Phone == c.Person.Phone && !j.seededCustomer(cu.ID) {
				n++
				refs = append(refs, cu.ID)
				j.attribute["customer/"+cu.ID] = true
			}
		}
		return n, strings.Join(refs, ", ")
	case wantBook:
		slots := j.candidates(c, in)
		n := 0
		for _, a := range j.t.Appointments {
			if a.Customer == cust && slots[a.Slot] && j.w.Appointments[a.ID] == nil {
				n++
				refs = append(refs, a.ID+"@"+a.Slot)
				j.attribute["appointment/"+a.ID] = true
			}
		}
		return n, strings.Join(refs, ", ")
	case wantPay, wantLink:
		return count(j.t.Charges, func(e truthEffect) bool { return e.Object == in.PI.ID }, "charge"), strings.Join(refs, ", ")
	case wantMessage:
		return count(j.t.Messages, byToken, "message"), strings.Join(refs, ", ")
	case wantNote:
		return count(j.t.Notes, byToken, "note"), strings.Join(refs, ", ")
	case wantPoints:
		return count(j.t.Points, byToken, "points"), strings.Join(refs, ", ")
	case wantCallback:
		n := 0
		for _, cb := range j.t.Callbacks {
			if cb.Token == in.Token {
				n++
				refs = append(refs, cb.ID)
				j.attribute["callback/"+cb.ID] = true
			}
		}
		return n, strings.Join(refs, ", ")
	case wantMove, wantCancel:
		ip := c.play.intents[in.N]
		appt := normID(ip.args.str("appointment_id"))
		a, ok := j.t.Appointments[appt]
		switch {
		case !ok:
			return 0, ""
		case in.Kind == wantCancel && !a.Active:
			return 1, appt
		case in.Kind == wantMove && (a.Slot == in.Slot.ID || !a.Active):
			return 1, appt // moved (or cancelled since by the caller)
		}
		return 0, ""
	}
	return 0, ""
}

func (j *speechAudit) seededCustomer(id string) bool { return j.w.People[id] != nil }

// candidates are the slots a booking intent may end up in: the ones asked
// for, the time's slots, and where its own moves take it.
func (j *speechAudit) candidates(c *callScript, in *callIntent) map[string]bool {
	s := map[string]bool{}
	for _, sl := range []*callSlot{in.Slot, in.Alternative, in.ChangeTo} {
		if sl != nil {
			s[sl.ID] = true
		}
	}
	if in.At != nil {
		s[in.At.Slots[0].ID], s[in.At.Slots[1].ID] = true, true
	}
	for _, o := range c.Intents {
		if o.Kind == wantMove && o.Of == in {
			s[o.Slot.ID] = true
		}
	}
	return s
}

// check judges one claim heard at at by call c; "" when it holds, else why
// not. booked are the times the same intent later heard a slot booked: a
// slot taken when asked for may be free and booked by a later answer.
func (j *speechAudit) check(c *callScript, cl claim, at time.Time, booked map[string][]time.Time) string {
	if cl.Say != "" && claimsEffect(cl.Say) {
		return "its say does not say it was not done: " + fmt.Sprintf("%q", cl.Say)
	}
	t := j.t
	appt := func(id string) (truthAppointment, string) {
		a, ok := t.Appointments[id]
		switch {
		case !ok:
			return a, "there is no appointment " + id
		case a.Customer != cl.Customer:
			return a, "appointment " + id + " is another customer's (" + a.Customer + ")"
		}
		return a, ""
	}
	describe := func(a truthAppointment) string {
		if !a.Active {
			return "appointment " + a.ID + " is cancelled"
		}
		return "appointment " + a.ID + " is at slot " + a.Slot + " (" + a.Start.UTC().Format(time.RFC3339) + ")"
	}
	switch cl.What {
	case claimBooked, claimMoved:
		a, why := appt(cl.Object)
		if why != "" {
			return why
		}
		at2 := cl.At.IsZero() || a.Start.Equal(cl.At)
		if a.Active && (cl.Slot == "" || a.Slot == cl.Slot) && at2 {
			return ""
		}
		if after(j.changes[cl.Object], at) {
			return "" // moved or cancelled later by the caller
		}
		return describe(a)
	case claimGone:
		if a, ok := t.Appointments[cl.Object]; ok && a.Active && a.Slot == cl.Slot {
			return describe(a) + ", as it was"
		}
	case claimCancelled:
		a, why := appt(cl.Object)
		if why != "" {
			return why
		}
		if a.Active {
			return describe(a)
		}
	case claimNotBooked:
		for _, a := range t.Appointments {
			if a.Customer != cl.Customer || !a.Active {
				continue
			}
			if (cl.Slot != "" && a.Slot == cl.Slot) || (cl.Slot == "" && !cl.At.IsZero() && a.Start.Equal(cl.At)) {
				if after(j.movesTo[cl.Customer+"/"+a.Slot], at) || after(booked[a.Slot], at) {
					continue // a later move or booking of the caller's took them there
				}
				return "the caller holds " + describe(a)
			}
		}
	case claimNotMoved:
		if a, ok := t.Appointments[cl.Object]; ok && a.Active && a.Slot == cl.Slot && !after(j.changes[cl.Object], at) {
			return describe(a)
		}
	case claimNotCancelled:
		if a, ok := t.Appointments[cl.Object]; ok && !a.Active && !after(j.changes[cl.Object], at) {
			return describe(a)
		}
	case claimCharged:
		pi := j.w.Intents[cl.Object]
		if pi == nil || pi.Person.ID != cl.Customer {
			return "payment intent " + cl.Object + " is not the caller's"
		}
		var amounts []int64
		for _, e := range t.Charges {
			if e.Object == cl.Object {
				amounts = append(amounts, e.Amount)
			}
		}
		switch {
		case len(amounts) == 0:
			return "the payments provider holds no charge of " + cl.Object
		case cl.Amount != 0 && !slices.Contains(amounts, cl.Amount):
			return fmt.Sprintf("the provider charged %v, not %d", amounts, cl.Amount)
		}
	case claimNotCharged:
		for _, e := range t.Charges {
			if e.Object == cl.Object {
				return "the payments provider charged it (" + e.Ref + ")"
			}
		}
	case claimSent, claimNotSent:
		return j.tokenClaim(cl, t.Messages, "the messaging provider sent")
	case claimNoted, claimNotNoted:
		return j.tokenClaim(cl, t.Notes, "the customer's record holds the note")
	case claimPoints, claimNotPoints:
		return j.tokenClaim(cl, t.Points, "the points ledger holds the change")
	case claimCallback:
		var cb truthCallback
		found := false
		for _, x := range t.Callbacks {
			if x.Token == cl.Token && (cl.Object == "" || x.ID == cl.Object) {
				cb, found = x, true
			}
		}
		switch {
		case !found:
			return "there is no callback for it"
		case cb.Customer != cl.Customer:
			return "callback " + cb.ID + " is another customer's"
		case !cb.Active:
			return "callback " + cb.ID + " is cancelled"
		case cb.Window != cl.Window && !j.amendedLater(c, cl.Token, at):
			return fmt.Sprintf("callback %s is for %s/%s", cb.ID, cb.Window[0], cb.Window[1])
		}
	case claimNotCallback:
		for _, x := range t.Callbacks {
			if x.Token == cl.Token {
				return "callback " + x.ID + " exists"
			}
		}
	case claimCustomer:
		cu, ok := t.Customers[cl.Object]
		switch {
		case !ok:
			return "there is no customer " + cl.Object
		case cl.Phone != "" && cu.Phone != cl.Phone:
			return "customer " + cl.Object + " has another number"
		}
	}
	return ""
}

// tokenClaim judges a claim that an effect found by token exists (or, for
// a "not" claim, does not).
func (j *speechAudit) tokenClaim(cl claim, es []truthEffect, exists string) string {
	var found []string
	for _, e := range es {
		if e.Token == cl.Token {
			found = append(found, e.Ref)
		}
	}
	if positive[cl.What] {
		if len(found) == 0 {
			return "nothing holds it"
		}
		return ""
	}
	if len(found) > 0 {
		return exists + " (" + strings.Join(found, ", ") + ")"
	}
	return ""
}

// amendedLater reports whether call c asked for the callback of token
// again (another window) after at.
func (j *speechAudit) amendedLater(c *callScript, token string, at time.Time) bool {
	for _, e := range c.play.events {
		if e.Tool == "request_callback" && e.At.After(at) && strings.Contains(string(e.Args), token) {
			return true
		}
	}
	return false
}

// unattributed counts the effects no intent asked for as duplicates.
func (j *speechAudit) unattributed() {
	callerOf := map[string]*callScript{}
	for cust, cs := range j.people {
		callerOf[cust] = cs[0]
	}
	extra := func(c *callScript, format string, args ...any) {
		j.r.Duplicates++
		if c != nil {
			j.flag(c, format, args...)
		} else {
			j.r.problem(format, args...)
		}
	}
	var ids []string
	for id := range j.t.Appointments {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := j.t.Appointments[id]
		if j.w.Appointments[id] != nil || j.attribute["appointment/"+id] {
			continue
		}
		extra(callerOf[a.Customer], "appointment %s at slot %s that no intent asked for", id, a.Slot)
	}
	for _, e := range j.t.Charges {
		if !j.attribute["charge/"+e.Ref] {
			extra(nil, "charge %s of %s that no intent of a played call asked for", e.Ref, e.Object)
		}
	}
	for kind, es := range map[string][]truthEffect{"message": j.t.Messages, "note": j.t.Notes, "points": j.t.Points} {
		for _, e := range es {
			if !j.attribute[kind+"/"+e.Ref] {
				extra(callerOf[e.Customer], "%s %s (token %q) that no intent of a played call asked for", kind, e.Ref, e.Token)
			}
		}
	}
	for _, cb := range j.t.Callbacks {
		if !j.attribute["callback/"+cb.ID] {
			extra(callerOf[cb.Customer], "callback %s (token %q) that no intent of a played call asked for", cb.ID, cb.Token)
		}
	}
	for _, cu := range j.t.Customers {
		if !j.seededCustomer(cu.ID) && !j.attribute["customer/"+cu.ID] {
			extra(callerOf[cu.ID], "customer %s that no call created", cu.ID)
		}
		// A balance is the seeded one plus the entries of the run.
		want := int64(0)
		if p := j.w.People[cu.ID]; p != nil {
			want = p.Points
		}
		for _, e := range j.t.Points {
			if e.Customer == cu.ID {
				want += e.Delta
			}
		}
		if cu.Points != want {
			if cu.Points > want {
				j.r.Duplicates++
			} else {
				j.r.Lost++
			}
			format, args := "customer %s has %d points, but the seeded balance and the points ledger make %d", []any{cu.ID, cu.Points, want}
			if c := callerOf[cu.ID]; c != nil {
				j.flag(c, format, args...)
			} else {
				j.r.problem(format, args...)
			}
		}
	}
}
