package chaos

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// What an answer claims, read from its outcome and details (and, where
// the details do not say, from the request it answers): that this caller
// now holds this appointment at this time, that this payment was charged,
// that this message was sent, or that something was not done. A pending
// or refusing answer must not claim the effect: its say must say so. The
// audit (calls_judge.go) checks every claim against the settled state.

// Claims, by what they say.
const (
	claimBooked       = "booked"        // Object (an appointment) is the caller's, at Slot / At
	claimMoved        = "moved"         // Object is the caller's, now at Slot
	claimCancelled    = "cancelled"     // Object is cancelled
	claimGone         = "no longer so"  // Object is no longer at Slot (cancelled or moved since)
	claimNotBooked    = "not booked"    // the caller holds nothing at Slot / At
	claimNotMoved     = "not moved"     // Object is not at Slot
	claimNotCancelled = "not cancelled" // Object is still active
	claimCharged      = "charged"       // Object (a payment intent of the caller's) was charged Amount
	claimNotCharged   = "not charged"   // nothing was charged for Object
	claimSent         = "sent"          // the message Token was sent
	claimNotSent      = "not sent"
	claimNoted        = "noted" // the note Token is on the caller's record
	claimNotNoted     = "not noted"
	claimPoints       = "points added" // the points change Token was made
	claimNotPoints    = "no points"
	claimCallback     = "callback arranged" // Object (a callback) is the caller's, for Token, in Window
	claimNotCallback  = "no callback"
	claimCustomer     = "customer record" // Object is a customer with the caller's number
	claimNotYet       = "not confirmed yet"
)

// claim is one thing an answer tells the caller (through the model).
type claim struct {
	What string
	// Customer is the caller's customer: what the claim is about must be
	// theirs.
	Customer string
	Object   string
	Slot     string
	At       time.Time
	Amount   int64
	Token    string
	Window   [2]string // wall clock, YYYY-MM-DDTHH:MM
	Phone    string
	// Say is the answer's say, when it must not claim the effect.
	Say string
}

func (c claim) String() string {
	var b strings.Builder
	b.WriteString(c.What)
	add := func(k, v string) {
		if v != "" {
			b.WriteString(" " + k + "=" + v)
		}
	}
	add("object", c.Object)
	add("slot", c.Slot)
	if !c.At.IsZero() {
		add("at", c.At.UTC().Format(time.RFC3339))
	}
	if c.Amount != 0 {
		add("amount", strconv.FormatInt(c.Amount, 10))
	}
	add("token", c.Token)
	if c.Window[0] != "" {
		add("window", c.Window[0]+"/"+c.Window[1])
	}
	return b.String()
}

// claims reads the claims of e's answer. A status check claims what the
// intent's own tool would; a conflicting_request claims what it says
// stands.
func (m *callModel) claims(e *callEvent) []claim {
	a := e.Answer
	tool := e.Tool
	var args ordered
	_ = json.Unmarshal(e.Args, &args)
	m.p.mu.Lock()
	customer := m.p.customer
	if e.Intent >= 0 && tool == "check_action_status" {
		ip := m.p.intents[e.Intent]
		tool, args = ip.tool, ip.args
	}
	m.p.mu.Unlock()
	if e.Intent < 0 || readOnlyTool(tool) {
		return nil // reads claim nothing the audit holds them to
	}
	var in *callIntent
	if e.Intent < len(m.c.Intents) {
		in = m.c.Intents[e.Intent]
	}
	return claimsOf(tool, args, a, customer, in, m.c.Tenant.loc)
}

// claimsOf reads what answer a to a call of tool with args claims, for a
// caller whose customer is customer; in is the intent it served.
func claimsOf(tool string, args ordered, a *voiceAnswer, customer string, in *callIntent, loc *time.Location) []claim {
	arg := args.str
	token := ""
	if in != nil {
		token = in.Token
	}
	switch {
	case a.Outcome == "pending":
		return []claim{{What: claimNotYet, Customer: customer, Say: a.Say}}
	case a.Outcome == "rejected" && a.Reason == "conflicting_request":
		// What stands is claimed as done when it went through.
		var d struct {
			Existing struct {
				Outcome string          `json:"outcome"`
				Current string          `json:"current"`
				Details json.RawMessage `json:"details"`
			} `json:"existing"`
		}
		if json.Unmarshal(a.Details, &d) != nil || d.Existing.Outcome != "confirmed" {
			return nil
		}
		stands := &voiceAnswer{Outcome: "confirmed", Details: d.Existing.Details, Current: d.Existing.Current}
		return claimsOf(tool, args, stands, customer, in, loc)
	case a.Outcome == "rejected" && notBusiness[a.Reason]:
		return nil // the tool call was refused: nothing claimed either way
	case a.Outcome == "rejected" && a.Reason == "charge_in_progress":
		return nil // another charge of it is under way: as pending
	}
	done := a.Outcome == "confirmed"
	d := details(a)
	str := func(k, fallback string) string {
		if v := rawString(d[k]); v != "" {
			return v
		}
		return fallback
	}
	not := func(what string) []claim {
		c := claim{What: what, Customer: customer, Token: token, Say: a.Say}
		return []claim{c}
	}
	switch tool {
	case "book_appointment":
		if !done {
			c := not(claimNotBooked)
			c[0].Slot = normID(arg("slot_id"))
			c[0].At = wallOrInstant(arg("starts_at"), loc)
			return c
		}
		c := claim{What: claimBooked, Customer: customer, Object: str("id", ""), Slot: str("slot_id", normID(arg("slot_id")))}
		c.At, _ = time.Parse(time.RFC3339Nano, str("starts_at", ""))
		if a.Current != "" {
			c.What = claimGone
		}
		return []claim{c}
	case "reschedule_appointment":
		appt := normID(arg("appointment_id"))
		switch {
		case done && a.Current != "":
			return []claim{{What: claimGone, Customer: customer, Object: str("id", appt), Slot: str("slot_id", normID(arg("slot_id")))}}
		case done:
			return []claim{{What: claimMoved, Customer: customer, Object: str("id", appt), Slot: str("slot_id", normID(arg("slot_id")))}}
		case a.Reason == "appointment_not_active":
			return []claim{{What: claimCancelled, Customer: customer, Object: appt}}
		}
		c := not(claimNotMoved)
		c[0].Object, c[0].Slot = appt, normID(arg("slot_id"))
		return c
	case "cancel_appointment":
		appt := normID(arg("appointment_id"))
		if done || a.Reason == "appointment_not_active" {
			return []claim{{What: claimCancelled, Customer: customer, Object: str("id", appt)}}
		}
		c := not(claimNotCancelled)
		c[0].Object = appt
		return c
	case "charge_payment", "send_payment_link":
		pi := normID(arg("payment_intent_id"))
		if done || a.Reason == "already_captured" {
			c := claim{What: claimCharged, Customer: customer, Object: pi}
			var req map[string]json.RawMessage
			_ = json.Unmarshal(d["request"], &req)
			if v := rawString(d["payment_intent_id"]); v != "" {
				c.Object = v
			} else if v := rawString(req["payment_intent_id"]); v != "" {
				c.Object = v
			}
			if n, ok := rawInt(d["amount"]); ok && done {
				c.Amount = n
			}
			return []claim{c}
		}
		c := not(claimNotCharged)
		c[0].Object = pi
		return c
	case "send_message":
		if done {
			return []claim{{What: claimSent, Customer: customer, Token: token}}
		}
		return not(claimNotSent)
	case "add_customer_note":
		if done {
			return []claim{{What: claimNoted, Customer: customer, Token: token}}
		}
		return not(claimNotNoted)
	case "add_loyalty_points":
		if done {
			return []claim{{What: claimPoints, Customer: customer, Token: token}}
		}
		return not(claimNotPoints)
	case "request_callback":
		if !done {
			return not(claimNotCallback)
		}
		if a.Current != "" {
			return nil // it says this window is no longer the one
		}
		return []claim{{
			What: claimCallback, Customer: customer, Object: str("id", ""), Token: token,
			Window: [2]string{wallMinute(arg("window_start")), wallMinute(arg("window_end"))},
		}}
	case "create_customer":
		if done {
			return []claim{{What: claimCustomer, Customer: customer, Object: str("id", ""), Phone: arg("phone")}}
		}
	}
	return nil
}

// negation finds the words by which a say tells the model it may not
// claim the effect.
var negation = regexp.MustCompile(`(?i)\b(not|no|nothing|never|unknown)\b|n't\b`)

// claimsEffect reports whether a say that must not claim the effect reads
// as if it did: it says nothing is confirmed or done in no words at all.
func claimsEffect(say string) bool { return !negation.MatchString(say) }

// wallOrInstant reads a booking's starts_at: an RFC 3339 instant, or the
// location's wall-clock time.
func wallOrInstant(s string, loc *time.Location) time.Time {
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t
		}
	}
	return time.Time{}
}

// wallMinute writes a wall-clock time as YYYY-MM-DDTHH:MM, however it was
// spelled (a space for the T, seconds).
func wallMinute(s string) string {
	s = strings.Replace(strings.TrimSpace(s), " ", "T", 1)
	if len(s) >= 16 {
		return s[:16]
	}
	return s
}

// normID writes an id as the API returns it (lower case).
func normID(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func rawInt(r json.RawMessage) (int64, bool) {
	var n int64
	if json.Unmarshal(r, &n) != nil {
		return 0, false
	}
	return n, true
}
