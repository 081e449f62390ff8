package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/phone"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/schedule"
)

// words is an action as a person at the front desk reads it: who, what
// was asked, what the caller was told, what is not known and where to look.
type words struct {
	Title string // "Booking for Maria Lopez"
	Who   *person
	Asked []fact
	// Told is what the agent was given to say about the action now, and
	// ToldOutcome its outcome (confirmed, rejected, pending).
	Told, ToldOutcome string
	// Unknown says what is not known, and Look where to look, when the
	// action waits for a person.
	Unknown string
	Look    []string
}

// person is a customer (or a phone number) to reach. Phone is E.164;
// Region is the country of the business that calls them.
type person struct {
	Name, Phone, Email string
	Region             string
}

// Shown is the phone number as the business writes it: nationally when it
// is of the business's country ("(212) 555-0142"), else internationally.
func (p person) Shown() string { return phone.Display(p.Phone, p.Region) }

// e164 is a phone number as oncecall stores it.
var e164 = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)

// Tel is the phone number as a tel: link; html/template would neutralise
// a tel: URL given as a string, and the number is E.164, nothing else.
func (p person) Tel() template.URL {
	if !e164.MatchString(p.Phone) {
		return ""
	}
	return template.URL("tel:" + p.Phone) //nolint:gosec // + and digits only
}

type fact struct{ Label, Value string }

// operationWords says what an operation does, as its Spec's Label puts it
// for staff ("Booking"); its name when it has none.
func (c *Console) operationWords(name string) string {
	if o, ok := c.cfg.Ops.Get(name); ok && o.Label() != "" {
		return o.Label()
	}
	return name
}

// platformNames are the voice platforms as people know them.
var platformNames = map[string]string{"dasha": "Dasha", "vapi": "Vapi", "retell": "Retell", "elevenlabs": "ElevenLabs"}

// platformOf is where an action's request came from, and its call's id.
func platformOf(a oncecall.Action) (string, string) {
	if n, ok := platformNames[a.CallPlatform]; ok {
		return n, a.CallID
	}
	if strings.HasPrefix(a.Key, "derived:") {
		return "a voice platform", "" // a tool call that named no call
	}
	return "REST API", ""
}

// providerNames are the providers as people know them.
var providerNames = map[string]string{
	"google": "Google Calendar", "microsoft": "Microsoft 365", "calcom": "Cal.com", "stripe": "Stripe",
	"twilio": "Twilio", "local": "oncecall's own records",
}

func providerName(s oncecall.Step) string {
	if n, ok := providerNames[s.ProviderKind]; ok {
		return n
	}
	switch {
	case s.ProviderAccount != "":
		return "the " + s.Capability + " service at " + s.ProviderAccount
	case s.Capability != "":
		return "the " + s.Capability + " provider"
	}
	return "the provider"
}

// request reads an action's request's top-level text fields.
func request(a oncecall.Action) map[string]string {
	var raw map[string]json.RawMessage
	out := map[string]string{}
	if json.Unmarshal(a.Request, &raw) != nil {
		return out
	}
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else if len(v) > 0 && v[0] != '"' && string(v) != "null" {
			out[k] = string(v) // numbers, such as an amount
		}
	}
	return out
}

func parseID(s string) uuid.UUID {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil
	}
	return id
}

// customerOf is the customer an action concerns: named by its request,
// or through the appointment, payment intent or callback it names.
func (c *Console) customerOf(r *http.Request, a oncecall.Action, in map[string]string) (uuid.UUID, error) {
	ctx := r.Context()
	if id := parseID(in["customer_id"]); id != uuid.Nil {
		return id, nil
	}
	if id := parseID(in["appointment_id"]); id != uuid.Nil {
		ap, err := c.cfg.Store.AppointmentByID(ctx, a.TenantID, id)
		return ap.CustomerID, ignoreMissing(err)
	}
	if id := parseID(in["payment_intent_id"]); id != uuid.Nil {
		pi, err := c.cfg.Store.PaymentIntentByID(ctx, a.TenantID, id)
		return pi.CustomerID, ignoreMissing(err)
	}
	if id := parseID(in["callback_id"]); id != uuid.Nil {
		cb, err := c.cfg.Store.CallbackByID(ctx, a.TenantID, id)
		return cb.CustomerID, ignoreMissing(err)
	}
	if a.Operation == "customer.create" {
		return parseID(a.ResourceID), nil
	}
	return uuid.Nil, nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return err
}

// customerNames names the customer of each action that names one, for
// lists (at most one read per action, and lists hold at most 200).
func (c *Console) customerNames(r *http.Request, actions []oncecall.Action) map[uuid.UUID]string {
	out := map[uuid.UUID]string{}
	for _, a := range actions {
		in := request(a)
		id, err := c.customerOf(r, a, in)
		if err != nil || id == uuid.Nil {
			if in["to"] != "" || in["phone"] != "" {
				out[a.ID] = cmpOr(in["name"], in["to"], in["phone"])
			}
			continue
		}
		if cu, err := c.cfg.Store.CustomerByID(r.Context(), a.TenantID, id); err == nil {
			out[a.ID] = cmpOr(cu.Name, cu.Phone, "a customer without a name")
		}
	}
	return out
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// words puts an action in words, on its tenant's clock (a slot's on its
// location's).
func (c *Console) words(r *http.Request, a oncecall.Action, d oncecall.ActionDetail, t tenantInfo) (words, error) {
	ctx := r.Context()
	in := request(a)
	w := words{Title: c.operationWords(a.Operation)}
	clock := t.Clock
	var err error
	if w.Who, err = c.who(r, a, in, t); err != nil {
		return w, err
	}
	if w.Who != nil {
		w.Title += " for " + w.Who.Name
	}
	now := c.now()
	add := func(label, value string) { w.Asked = addFact(w.Asked, label, value) }
	slot := func(id uuid.UUID) error {
		if id == uuid.Nil {
			return nil
		}
		p, err := c.cfg.Store.SlotPlace(ctx, a.TenantID, id)
		if err != nil {
			return ignoreMissing(err)
		}
		sc := clock.In(p.Timezone)
		add("When", sc.Spoken(p.StartsAt, now)+" ("+sc.Zone+")")
		add("With", p.Practitioner)
		add("Where", strings.Trim(p.Location+", "+p.Address, ", "))
		return nil
	}
	switch a.Operation {
	case "appointment.book":
		if err := slot(parseID(in["slot_id"])); err != nil {
			return w, err
		}
		if v := in["starts_at"]; v != "" {
			if at, err := time.Parse(time.RFC3339, v); err == nil {
				add("When", clock.Spoken(at, now)+" ("+clock.Zone+")")
			} else {
				add("When", v+" (as asked, on the location's clock)")
			}
		}
		if id := parseID(in["practitioner_id"]); id != uuid.Nil {
			if p, err := c.cfg.Store.PractitionerByID(ctx, a.TenantID, id); err == nil {
				add("With", p.Name)
			}
		}
		if id := parseID(in["location_id"]); id != uuid.Nil {
			if l, err := c.cfg.Store.LocationByID(ctx, a.TenantID, id); err == nil {
				add("Where", l.Name)
			}
		}
		add("Service", in["service"])
	case "appointment.reschedule", "appointment.cancel":
		if id := parseID(in["appointment_id"]); id != uuid.Nil {
			ap, err := c.cfg.Store.AppointmentByID(ctx, a.TenantID, id)
			if err = ignoreMissing(err); err != nil {
				return w, err
			}
			if ap.ID != uuid.Nil {
				add("Appointment", clock.Spoken(ap.StartsAt, now)+" ("+clock.Zone+")")
				add("Service", ap.Service)
			}
		}
		if err := slot(parseID(in["slot_id"])); err != nil {
			return w, err
		}
	default:
		if err := c.askedOther(r, a, in, clock, now, add); err != nil {
			return w, err
		}
	}
	w.Asked = dedupe(w.Asked)
	if o, ok := c.cfg.Ops.Get(a.Operation); ok {
		ans := dashatool.ForAction(a, o.Phrases())
		w.Told, w.ToldOutcome = ans.Say, ans.Outcome
	}
	if a.NeedsOperator || a.State != oncecall.Completed {
		w.Unknown, w.Look = unknownWords(a, d.Steps, w, clock, now)
	}
	return w, nil
}

// askedOther adds what was asked of a charge, a message, a callback or a
// customer's record.
func (c *Console) askedOther(r *http.Request, a oncecall.Action, in map[string]string, clock schedule.Clock, now time.Time, add func(label, value string)) error {
	ctx := r.Context()
	switch a.Operation {
	case "payment_intent.create", "payment.charge", "payment.link", "payment_intent.cancel":
		if id := parseID(in["payment_intent_id"]); id != uuid.Nil {
			pi, err := c.cfg.Store.PaymentIntentByID(ctx, a.TenantID, id)
			if err = ignoreMissing(err); err != nil {
				return err
			}
			if pi.ID != uuid.Nil {
				amount := pi.Amount
				if v, err := json.Number(in["amount"]).Int64(); err == nil && v > 0 {
					amount = v
				}
				add("Amount", op.SpokenAmount(amount, pi.Currency))
				add("For", pi.Description)
			}
		} else if v, err := json.Number(in["amount"]).Int64(); err == nil {
			add("Amount", op.SpokenAmount(v, in["currency"]))
			add("For", in["description"])
		}
	case "message.send":
		if m, err := c.cfg.Store.MessageOfAction(ctx, a.TenantID, a.ID); err == nil {
			add("To", m.Recipient+" ("+m.Channel+")")
			add("Text", strings.TrimSpace(m.SubjectLine+"\n"+m.Body))
		} else {
			add("To", cmpOr(in["to"], "the customer"))
			add("Text", cmpOr(in["body"], in["template"]))
		}
	case "callback.request":
		if id := parseID(a.ResourceID); id != uuid.Nil {
			if cb, err := c.cfg.Store.CallbackByID(ctx, a.TenantID, id); err == nil {
				cc, _ := schedule.NewClock(cb.Timezone, string(clock.Locale))
				add("Call back", cc.Window(cb.WindowStart, cb.WindowEnd, now)+" ("+cc.Zone+")")
				add("About", cb.Reason)
			}
		}
		add("About", in["reason"])
	case "customer.note.append":
		add("Note", in["text"])
	case "customer.points.add":
		add("Points", in["points"])
		add("Why", in["reason"])
	}
	return nil
}

// who is the person an action concerns: its customer, else the number or
// address its request names.
func (c *Console) who(r *http.Request, a oncecall.Action, in map[string]string, t tenantInfo) (*person, error) {
	cid, err := c.customerOf(r, a, in)
	if err != nil {
		return nil, err
	}
	if cid != uuid.Nil {
		cu, err := c.cfg.Store.CustomerByID(r.Context(), a.TenantID, cid)
		if err = ignoreMissing(err); err != nil {
			return nil, err
		}
		if cu.ID != uuid.Nil {
			return &person{Name: cmpOr(cu.Name, "a customer without a name"), Phone: cu.Phone, Email: cu.Email, Region: t.Region}, nil
		}
	}
	to := cmpOr(in["phone"], in["to"])
	if to == "" {
		return nil, nil
	}
	p := &person{Name: cmpOr(in["name"], to), Region: t.Region}
	if strings.HasPrefix(to, "+") {
		p.Phone, p.Name = to, cmpOr(in["name"], phone.Display(to, t.Region))
	} else {
		p.Email = to
	}
	return p, nil
}

// addFact adds a fact that has a value.
func addFact(fs []fact, label, value string) []fact {
	if value == "" {
		return fs
	}
	return append(fs, fact{label, value})
}

// calendarLook says where to look for a write to a business's own
// calendar (Google Calendar, Microsoft 365, Cal.com) in words its own
// search finds: the title and the time oncecall wrote the event with, not
// oncecall's key, which no calendar page shows.
func calendarLook(a oncecall.Action, s oncecall.Step, clock schedule.Clock, now time.Time) (string, bool) {
	if !calendarKinds[s.ProviderKind] {
		return "", false
	}
	if _, ok := calendar.OpOf(a.Operation); !ok {
		return "", false
	}
	var p calendar.Payload // read, not checked: what the step was sent with
	if err := json.Unmarshal(s.Payload, &p); err != nil || p.Start.UTC.IsZero() {
		return "", false
	}
	at := clock.In(p.Start.Zone)
	line := fmt.Sprintf("Search %s for “%s” on %s (%s)", providerName(s), p.Title(), at.Spoken(p.Start.UTC, now), at.Zone)
	if p.Practitioner.Name != "" {
		line += ", " + p.Practitioner.Name + "'s calendar"
	}
	line += ": oncecall writes the event under that title. Found: confirm with the event's id"
	if s.ProviderRef != "" {
		line += " (it may be " + s.ProviderRef + ")"
	}
	return line + ". Not there: reject.", true
}

func dedupe(fs []fact) []fact {
	seen := map[fact]bool{}
	out := fs[:0]
	for _, f := range fs {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// unknownWords says what an action waiting for a person does not know and
// where to look: each open step's provider, with what to look for.
func unknownWords(a oncecall.Action, steps []oncecall.Step, w words, clock schedule.Clock, now time.Time) (string, []string) {
	var look []string
	for _, s := range steps {
		if s.State != oncecall.StepUnknown && s.State != oncecall.StepPending {
			continue
		}
		what := []string{}
		for _, f := range w.Asked {
			if f.Label == "With" || f.Label == "When" || f.Label == "Amount" || f.Label == "To" || f.Label == "Appointment" {
				what = append(what, f.Value)
			}
		}
		if w.Who != nil {
			what = append(what, w.Who.Name)
		}
		if line, ok := calendarLook(a, s, clock, now); ok {
			look = append(look, line)
			continue
		}
		line := "Check " + providerName(s)
		if len(what) > 0 {
			line += " for " + strings.Join(what, ", ")
		}
		line += fmt.Sprintf(": it was sent with the key %s", s.ProviderKey)
		if s.ProviderRef != "" {
			line += " and may be " + s.ProviderRef
		}
		look = append(look, line+".")
	}
	switch {
	case a.State == oncecall.Running:
		return "Someone is working on it now: its outcome is not recorded yet.", look
	case a.State == oncecall.Unknown:
		return "Whether it happened is not known: the provider's answer was lost, and the checks since have not settled it.", look
	case a.NeedsOperator:
		return "It happened, but a follow-up (such as its confirmation message) is stuck.", look
	}
	return "", look
}
