package chaos

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// fakeOncecall answers the four platforms' tool calls in memory, for the
// tools the scripts use (all but callbacks and payment links), the way
// oncecall promises to: one effect per intent, whatever the spelling, the
// re-sends, the re-invocations and the platform; a second booking in one
// call refused (already_booked_in_call); an invented action_id ignored.
// It is what the audit's model of the truth must find nothing wrong with.
// Each of fakeBreaks breaks one rule, for the audit to catch.
type fakeOncecall struct {
	w      *callWorld
	breaks fakeBreaks

	mu       sync.Mutex
	tenants  map[string]*callTenant // by API key
	cust     map[string]*truthCustomer
	appts    map[string]*truthAppointment
	holder   map[string]string // slot -> its active appointment
	booked   map[string]string // platform/call/customer -> the call's booking
	notes    map[string]*truthEffect
	charges  []truthEffect
	messages []truthEffect
	points   []truthEffect
	actions  map[string]*fakeAction // by id
	keys     map[string]string      // identity -> action id
	seq      int
	declined map[string]bool // payments declined once
	// slowCall is the call whose request is slow at the moment (LockOut), or "".
	slowCall string
	requests int
}

// fakeBreaks each break one rule of the promise.
type fakeBreaks struct {
	// ConfirmWithoutCharge: charge_payment answers confirmed and charges nothing.
	ConfirmWithoutCharge bool
	// BookEveryDelivery: book_appointment keeps no identity: every
	// delivery books anew, taken slot or not.
	BookEveryDelivery bool
	// DeclineButCharge: charge_payment answers declined, and charges.
	DeclineButCharge bool
	// PendingMessages: send_message answers pending for ever.
	PendingMessages bool
	// PendingSaysSent: send_message answers pending with a say that
	// claims the message is on its way.
	PendingSaysSent bool
	// LockOut: one request in eight is slow, and every other call's
	// request that comes meanwhile gets 503 (the tenant's places taken).
	LockOut bool
	// ForgetNotes: add_customer_note answers confirmed and keeps nothing.
	ForgetNotes bool

	// The breaks a calls run found in oncecall, each as the fake would have it.

	// SecondBookingInCall: book_appointment books again in a call that
	// holds a booking (a changed mind makes a second booking).
	SecondBookingInCall bool
	// KeyBySpelling: a booking's identity is its starts_at as written, not
	// the instant (the same time spelled two ways is two requests).
	KeyBySpelling bool
	// SharedActionIDs: an action_id the fake never gave is taken as the
	// key itself, for any caller and any tool.
	SharedActionIDs bool
	// CallWithoutPlatform: a call is known by its id alone, another
	// platform's stored as "<platform>:<id>": a Dasha call id spelled so is
	// that call.
	CallWithoutPlatform bool
	// Declines: the first charge of each payment is declined (a fault, not
	// a break). ForgetDeclines: a decline is not kept, so the next request
	// for the same charge is decided afresh.
	Declines, ForgetDeclines bool
	// RefuseLongCallIDs: a call id longer than 190 characters makes every
	// tool call fail (503), as a stored "<platform>:<id>" past 200 would.
	RefuseLongCallIDs bool
}

type fakeAction struct {
	id, tool, key, call string
	answer              voiceAnswer
}

func newFakeOncecall(w *callWorld, b fakeBreaks) *fakeOncecall {
	f := &fakeOncecall{
		w: w, breaks: b, tenants: map[string]*callTenant{}, cust: map[string]*truthCustomer{}, appts: map[string]*truthAppointment{},
		holder: map[string]string{}, booked: map[string]string{}, notes: map[string]*truthEffect{}, actions: map[string]*fakeAction{},
		keys: map[string]string{}, declined: map[string]bool{},
	}
	for _, t := range w.Tenants {
		t.ID, t.Key = fmt.Sprintf("00000000-0000-4000-8000-%012d", t.N+1), fmt.Sprintf("key-%d", t.N)
		f.tenants[t.Key] = t
	}
	for id, p := range w.People {
		f.cust[id] = &truthCustomer{ID: id, Phone: p.Phone, Points: p.Points}
	}
	for id, b := range w.Appointments {
		f.appts[id] = &truthAppointment{ID: id, Customer: b.Person.ID, Slot: b.Slot.ID, Start: b.Slot.Start, Active: true}
		f.holder[b.Slot.ID] = id
	}
	return f
}

// truth is the fake's state as the audit reads a real run's.
func (f *fakeOncecall) truth() callsTruth {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := callsTruth{Appointments: map[string]truthAppointment{}, Customers: map[string]truthCustomer{}, Callbacks: map[string]truthCallback{}}
	for id, a := range f.appts {
		t.Appointments[id] = *a
	}
	for id, c := range f.cust {
		t.Customers[id] = *c
	}
	for _, n := range f.notes {
		t.Notes = append(t.Notes, *n)
	}
	t.Charges = append(t.Charges, f.charges...)
	t.Messages = append(t.Messages, f.messages...)
	t.Points = append(t.Points, f.points...)
	return t
}

func (f *fakeOncecall) newID() string {
	f.seq++
	return fmt.Sprintf("01a00000-0000-7000-8000-%012d", f.seq)
}

// fakeCall is one tool call as the fake read it.
type fakeCall struct {
	id, tool string
	args     ordered
}

func (f *fakeOncecall) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	var platform, callID, caller string
	var calls []fakeCall
	var top ordered
	if err := json.Unmarshal(body, &top); err != nil {
		http.Error(w, "not a JSON object", http.StatusBadRequest)
		return
	}
	args := func(v any) ordered {
		raw, _ := v.(json.RawMessage)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = json.RawMessage(s)
		}
		var o ordered
		_ = json.Unmarshal(raw, &o)
		return o
	}
	sub := func(v any) ordered {
		var o ordered
		raw, _ := v.(json.RawMessage)
		_ = json.Unmarshal(raw, &o)
		return o
	}
	switch path := r.URL.Path; {
	case strings.HasPrefix(path, "/v1/dasha/tools/"):
		platform, callID, caller = platDasha, top.str("callId"), strings.TrimPrefix(top.str("endpoint"), "tel:")
		calls = []fakeCall{{tool: top.str("toolName"), args: args(top.get("arguments"))}}
		if t := f.tenants[key]; t == nil || top.str("orgId") != t.Org {
			http.Error(w, "wrong org", http.StatusForbidden)
			return
		}
	case path == "/v1/vapi/webhook":
		platform = platVapi
		if key == "" {
			key = r.Header.Get("X-Vapi-Secret")
		}
		msg := sub(top.get("message"))
		call := sub(msg.get("call"))
		callID, caller = call.str("id"), sub(call.get("customer")).str("number")
		var list []json.RawMessage
		raw, _ := msg.get("toolCallList").(json.RawMessage)
		_ = json.Unmarshal(raw, &list)
		for _, e := range list {
			var tc ordered
			_ = json.Unmarshal(e, &tc)
			fc := fakeCall{id: tc.str("id"), tool: tc.str("name"), args: args(tc.get("arguments"))}
			if fn := sub(tc.get("function")); fn != nil {
				fc.tool, fc.args = fn.str("name"), args(fn.get("arguments"))
			}
			calls = append(calls, fc)
		}
	case strings.HasPrefix(path, "/v1/retell/functions/"):
		platform = platRetell
		call := sub(top.get("call"))
		callID, caller = call.str("call_id"), call.str("from_number")
		calls = []fakeCall{{tool: strings.TrimPrefix(path, "/v1/retell/functions/"), args: args(top.get("args"))}}
		if t := f.tenants[key]; t == nil || !fakeRetellSigned(body, t.RetellKey, r.Header.Get("X-Retell-Signature")) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	case strings.HasPrefix(path, "/v1/elevenlabs/tools/"):
		platform = platElevenLabs
		if key == "" {
			key = r.Header.Get("X-Oncecall-Key")
		}
		callID, caller = top.str("system__conversation_id"), top.str("system__caller_id")
		calls = []fakeCall{{tool: strings.TrimPrefix(path, "/v1/elevenlabs/tools/"), args: slicesDeleteFunc(top, func(e kv) bool { return strings.HasPrefix(e.K, "system__") })}}
	default:
		http.NotFound(w, r)
		return
	}
	t := f.tenants[key]
	if t == nil {
		http.Error(w, "no such key", http.StatusUnauthorized)
		return
	}
	if f.breaks.LockOut {
		slow, refuse := f.lockOut(platform + "/" + callID)
		if refuse {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"detail":"too many requests of this tenant are using the database at once; nothing was stored for this one"}`) //nolint:errcheck // the caller retries
			return
		}
		if slow {
			time.Sleep(2500 * time.Millisecond)
			f.mu.Lock()
			f.slowCall = ""
			f.mu.Unlock()
		}
	}
	if f.breaks.RefuseLongCallIDs && len(callID) > 190 {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"detail":"the tool call could not be completed; nothing was stored for it, retry"}`) //nolint:errcheck // the caller retries
		return
	}
	call := platform + "/" + callID
	if f.breaks.CallWithoutPlatform {
		call = platform + ":" + callID
		if platform == platDasha {
			call = callID
		}
	}
	var answers []voiceAnswer
	for _, c := range calls {
		answers = append(answers, f.answer(t, call, caller, c))
	}
	w.Header().Set("Content-Type", "application/json")
	if platform != platVapi {
		json.NewEncoder(w).Encode(answers[0]) //nolint:errcheck // the caller sees a cut answer
		return
	}
	type result struct {
		ToolCallID string `json:"toolCallId"`
		Result     string `json:"result"`
	}
	var out struct {
		Results []result `json:"results"`
	}
	for i, a := range answers {
		line, _ := json.Marshal(a)
		out.Results = append(out.Results, result{ToolCallID: calls[i].id, Result: string(line)})
	}
	json.NewEncoder(w).Encode(out) //nolint:errcheck // the caller sees a cut answer
}

// lockOut decides, with LockOut, whether this request is slow (one in
// eight, when none is) or refused (another call's request is slow).
func (f *fakeOncecall) lockOut(call string) (slow, refuse bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	switch {
	case f.slowCall != "" && f.slowCall != call:
		return false, true
	case f.slowCall == "" && f.requests%8 == 0:
		f.slowCall = call
		return true, false
	}
	return false, false
}

func fakeRetellSigned(body []byte, key, header string) bool {
	v, d, ok := strings.Cut(strings.TrimPrefix(header, "v="), ",d=")
	if !ok {
		return false
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	mac.Write([]byte(v))
	got, err := hex.DecodeString(d)
	return err == nil && hmac.Equal(got, mac.Sum(nil))
}

// answer performs one tool call for tenant t in call (platform/call id).
func (f *fakeOncecall) answer(t *callTenant, call, caller string, c fakeCall) voiceAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := c.args
	id := func(k string) string { return normID(a.str(k)) }
	details := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	rejected := func(reason string) voiceAnswer {
		return voiceAnswer{Outcome: "rejected", Reason: reason, Say: "It was not done.", Details: json.RawMessage("{}")}
	}
	confirmed := func(v any) voiceAnswer {
		return voiceAnswer{Outcome: "confirmed", Say: "It is done.", Details: details(v)}
	}
	// run answers the action of key: the stored answer of a repeat (the
	// action_id of one of this tool's actions names its key), else do's,
	// stored when store says so.
	run := func(key string, do func(actionID string) (voiceAnswer, bool)) voiceAnswer {
		key = t.ID + "/" + c.tool + "/" + key
		if given := a.str("action_id"); given != "" {
			if x, ok := f.actions[normID(given)]; ok && x.tool == c.tool {
				key = x.key
			} else if !ok && f.breaks.SharedActionIDs {
				key = t.ID + "/" + given
			}
		}
		if x, ok := f.keys[key]; ok {
			return f.actions[x].answer
		}
		actionID := f.newID()
		ans, store := do(actionID)
		ans.ActionID = actionID
		if store {
			f.keys[key] = actionID
			f.actions[actionID] = &fakeAction{id: actionID, tool: c.tool, key: key, call: call, answer: ans}
		}
		return ans
	}
	switch c.tool {
	case "find_customer":
		var found []map[string]string
		for _, cu := range f.cust {
			if cu.Phone == caller {
				found = append(found, map[string]string{"customer_id": cu.ID})
			}
		}
		return confirmed(map[string]any{"customers": found})
	case "list_appointments":
		var list []map[string]string
		for _, ap := range f.appts {
			if ap.Customer == id("customer_id") && ap.Active {
				list = append(list, map[string]string{"id": ap.ID})
			}
		}
		return confirmed(map[string]any{"appointments": list})
	case "check_action_status":
		x, ok := f.actions[id("action_id")]
		if !ok {
			return rejected("unknown_action")
		}
		return x.answer
	case "create_customer":
		return run(a.str("phone"), func(string) (voiceAnswer, bool) {
			for _, cu := range f.cust {
				if cu.Phone == a.str("phone") {
					return confirmed(map[string]string{"id": cu.ID}), true
				}
			}
			cid := f.newID()
			f.cust[cid] = &truthCustomer{ID: cid, Phone: a.str("phone")}
			return confirmed(map[string]string{"id": cid}), true
		})
	case "book_appointment":
		return f.book(t, call, c, id, run, rejected, confirmed)
	case "reschedule_appointment":
		return run(id("appointment_id")+"/"+id("slot_id"), func(string) (voiceAnswer, bool) {
			ap, ok := f.appts[id("appointment_id")]
			switch {
			case !ok:
				return rejected("appointment_not_found"), false
			case !ap.Active:
				return rejected("appointment_not_active"), false
			case f.holder[id("slot_id")] != "" && f.holder[id("slot_id")] != ap.ID:
				return rejected("slot_unavailable"), false
			}
			delete(f.holder, ap.Slot)
			ap.Slot, ap.Start = id("slot_id"), f.w.Slots[id("slot_id")].Start
			f.holder[ap.Slot] = ap.ID
			return confirmed(map[string]any{"id": ap.ID, "customer_id": ap.Customer, "slot_id": ap.Slot, "starts_at": ap.Start}), true
		})
	case "cancel_appointment":
		return run(id("appointment_id"), func(string) (voiceAnswer, bool) {
			ap, ok := f.appts[id("appointment_id")]
			switch {
			case !ok:
				return rejected("appointment_not_found"), false
			case !ap.Active:
				return rejected("appointment_not_active"), false
			}
			ap.Active = false
			delete(f.holder, ap.Slot)
			return confirmed(map[string]string{"id": ap.ID}), true
		})
	case "charge_payment":
		return run(id("payment_intent_id"), func(string) (voiceAnswer, bool) {
			pi := f.w.Intents[id("payment_intent_id")]
			if pi == nil {
				return rejected("intent_not_found"), false
			}
			charge := truthEffect{Ref: f.newID(), Object: pi.ID, Amount: pi.Amount}
			if f.breaks.Declines && !f.declined[pi.ID] {
				f.declined[pi.ID] = true
				return rejected("card_declined"), !f.breaks.ForgetDeclines
			}
			switch {
			case f.breaks.ConfirmWithoutCharge:
			case f.breaks.DeclineButCharge:
				f.charges = append(f.charges, charge)
				return rejected("card_declined"), true
			default:
				f.charges = append(f.charges, charge)
			}
			return confirmed(map[string]any{"payment_intent_id": pi.ID, "amount": pi.Amount}), true
		})
	case "send_payment_link":
		return rejected("links_need_stripe")
	case "send_message":
		vars := map[string]string{}
		if raw, ok := a.get("variables").(json.RawMessage); ok {
			_ = json.Unmarshal(raw, &vars)
		}
		key := call + "/" + id("customer_id") + "/" + strings.ToLower(a.str("channel")) + "/" + a.str("template") + "/" + a.str("subject_id") + "/" + a.str("send_ref")
		return run(key, func(string) (voiceAnswer, bool) {
			if f.breaks.PendingMessages || f.breaks.PendingSaysSent {
				say := "The message is NOT confirmed yet."
				if f.breaks.PendingSaysSent {
					say = "The message is on its way to the caller."
				}
				return voiceAnswer{Outcome: "pending", Say: say, Details: json.RawMessage("{}")}, true
			}
			f.messages = append(f.messages, truthEffect{Ref: f.newID(), Customer: id("customer_id"), Token: tokenIn(vars["body"])})
			return confirmed(map[string]string{"status": "queued"}), true
		})
	case "add_customer_note":
		row := call + "/" + id("customer_id") + "/" + a.str("note_ref")
		return run(row+"/"+a.str("text"), func(string) (voiceAnswer, bool) {
			if !f.breaks.ForgetNotes {
				n, ok := f.notes[row]
				if !ok {
					n = &truthEffect{Ref: f.newID(), Customer: id("customer_id")}
					f.notes[row] = n
				}
				n.Token = tokenIn(a.str("text")) // a later note of the call amends it
			}
			return confirmed(map[string]string{"text": a.str("text")}), true
		})
	case "add_loyalty_points":
		var delta int64
		if raw, ok := a.get("delta").(json.RawMessage); ok {
			_ = json.Unmarshal(raw, &delta)
		}
		key := call + "/" + id("customer_id") + "/" + fmt.Sprint(delta) + "/" + a.str("points_ref")
		return run(key, func(string) (voiceAnswer, bool) {
			cu := f.cust[id("customer_id")]
			if cu == nil || cu.Points+delta < 0 {
				return rejected("insufficient_points"), false
			}
			cu.Points += delta
			f.points = append(f.points, truthEffect{Ref: f.newID(), Customer: cu.ID, Delta: delta, Token: tokenIn(a.str("reason"))})
			return confirmed(map[string]any{"delta": delta, "balance_now": cu.Points}), true
		})
	}
	return rejected("invalid_arguments")
}

// book books a slot, or the service at a time (an instant, or the
// tenant's wall clock: one identity either way). A call holds one booking
// of a customer: another is refused as already_booked_in_call.
func (f *fakeOncecall) book(t *callTenant, call string, c fakeCall, id func(string) string,
	run func(string, func(string) (voiceAnswer, bool)) voiceAnswer, rejected func(string) voiceAnswer, confirmed func(any) voiceAnswer,
) voiceAnswer {
	customer := id("customer_id")
	var slots []*callSlot
	target := id("slot_id")
	if target != "" {
		if s := f.w.Slots[target]; s != nil {
			slots = append(slots, s)
		}
	} else {
		at := wallOrInstant(c.args.str("starts_at"), t.loc)
		target = at.UTC().Format(time.RFC3339)
		for _, s := range f.w.Slots {
			if s.Tenant == t && s.Start.Equal(at) {
				slots = append(slots, s)
			}
		}
	}
	if f.breaks.KeyBySpelling && c.args.str("starts_at") != "" {
		target = c.args.str("starts_at")
	}
	do := func(actionID string) (voiceAnswer, bool) {
		if prior, ok := f.booked[call+"/"+customer]; ok && !f.breaks.BookEveryDelivery && !f.breaks.SecondBookingInCall {
			if ap := f.appts[prior]; ap.Active {
				return rejected("already_booked_in_call"), false
			}
		}
		for _, s := range slots {
			if f.holder[s.ID] != "" && !f.breaks.BookEveryDelivery {
				continue
			}
			ap := &truthAppointment{ID: f.newID(), Customer: customer, Slot: s.ID, Start: s.Start, Active: true}
			f.appts[ap.ID], f.holder[s.ID], f.booked[call+"/"+customer] = ap, ap.ID, ap.ID
			return confirmed(map[string]any{"id": ap.ID, "customer_id": customer, "slot_id": s.ID, "starts_at": s.Start}), true
		}
		return rejected("slot_unavailable"), false
	}
	if f.breaks.BookEveryDelivery {
		ans, _ := do("")
		ans.ActionID = f.newID()
		return ans
	}
	return run(customer+"/"+target, do)
}
