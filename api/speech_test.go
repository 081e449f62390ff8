package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// claimsOfEffect are wordings that tell a caller something happened outside
// oncecall: a card charged, a message sent.
var claimsOfEffect = []string{
	"went through", "been charged", "were charged", "was charged", "is charged", "on its way", "is being sent",
	"was sent", "is sent", "has been sent", "queued for sending",
}

// denials are the negations the refusals use, which contain a claim's words.
var denials = []string{"nothing was charged", "no link was sent", "has not been sent"}

// sayClaims lists the claims of effect in a say, denials aside.
func sayClaims(say string) []string {
	say = strings.ToLower(say)
	for _, d := range denials {
		say = strings.ReplaceAll(say, d, "")
	}
	var out []string
	for _, c := range claimsOfEffect {
		if strings.Contains(say, c) {
			out = append(out, c)
		}
	}
	return out
}

// said is an answer as a failure prints it.
func said(a answer) string {
	return fmt.Sprintf("outcome %s, reason %q, say %q, details %s", a.Outcome, a.Reason, a.Say, a.Details)
}

// simProvider is the provider simulator as a provider of the JSON protocol.
func simProvider(sim *simtest.Sim) provider.Provider {
	return provider.NewHTTP(provider.HTTPConfig{
		BaseURL: sim.URL, Timeout: 2 * time.Second,
		Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
	})
}

// TestNoPaymentsProviderChargeIsRefused: with no payment processor, a
// charge is refused PAYMENTS_NOT_CONFIGURED over a voice tool and over REST,
// its say claims no charge, and nothing is written: no payment, the intent
// as it was.
func TestNoPaymentsProviderChargeIsRefused(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	intent := d.intent(t, 4500)
	a := decodeAnswer(t, d.call("charge_payment", "call-1", map[string]any{"payment_intent_id": intent}))
	if a.Outcome != "rejected" || a.Reason != "payments_not_configured" || !strings.Contains(a.Say, "nothing was charged") {
		t.Fatalf("charge_payment without a processor: %s", said(a))
	}
	if claims := sayClaims(a.Say); len(claims) > 0 {
		t.Fatalf("the refusal's say claims %q: %s", claims, a.Say)
	}
	status := decodeAnswer(t, d.call("check_action_status", "call-1", map[string]any{"action_id": a.ActionID}))
	if status.Outcome != "rejected" || status.Say != a.Say {
		t.Fatalf("status of the refused charge: %s", said(status))
	}
	rest := d.Post("/v1/payments", d.key, "charge-rest", map[string]any{"payment_intent_id": intent})
	wantRejection(t, rest, "PAYMENTS_NOT_CONFIGURED")
	if n := d.Count("SELECT count(*) FROM payments"); n != 0 {
		t.Fatalf("%d payments recorded without a processor", n)
	}
	if n := d.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'requires_capture' AND captured_amount IS NULL AND charging_action_id IS NULL", intent); n != 1 {
		t.Fatal("the refused charges changed the intent")
	}
}

// TestPaymentLinkWithoutMessagingIsRefused: with Stripe making payment
// links but no messaging provider to text them, send_payment_link is
// refused MESSAGING_NOT_CONFIGURED before anything is made: no Checkout
// Session, no SMS in the outbox, the intent free, and no say that a link is
// on its way.
func TestPaymentLinkWithoutMessagingIsRefused(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	p, err := stripeprovider.New(stripeprovider.Config{SecretKey: "sk_test_sim", BaseURL: sim.URL, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := setupDasha(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Payments: p, provider.Holds: p, provider.Links: p}
		c.ReconcileDisabled = true
	})
	c, err := d.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: d.tenant, Name: "Lin", Phone: "+15557654321"})
	if err != nil {
		t.Fatal(err)
	}
	r := d.Post("/v1/payment-intents", d.key, "approve", map[string]any{"customer_id": c.ID, "amount": 4500, "currency": "EUR", "payment_method": "payment_link"})
	if r.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	intent := resultOf(t, r)["id"].(string)
	a := decodeAnswer(t, d.call("send_payment_link", "call-link", map[string]any{"payment_intent_id": intent}))
	if a.Outcome != "rejected" || a.Reason != "messaging_not_configured" || !strings.Contains(a.Say, "no link was sent") {
		t.Fatalf("send_payment_link without messaging: %s", said(a))
	}
	if claims := sayClaims(a.Say); len(claims) > 0 {
		t.Fatalf("the refusal's say claims %q: %s", claims, a.Say)
	}
	if n := len(sim.StripeSessions()); n != 0 {
		t.Fatalf("%d Checkout Sessions made for a link nothing would send", n)
	}
	if n := d.Count("SELECT count(*) FROM messages") + d.Count("SELECT count(*) FROM action_steps"); n != 0 {
		t.Fatalf("the refused link left %d messages or steps", n)
	}
	if n := d.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND charging_action_id IS NULL", intent); n != 1 {
		t.Fatal("the refused link holds the intent")
	}
}

// TestLocalMessageIsNotSaidSent: with no messaging provider, send_message
// records the message in oncecall's outbox for the business's team and the
// agent hears exactly that, never that it is sent or on its way; through a
// messaging provider, the same tool may say it is on its way. Both are said
// the same once their answers are pruned.
func TestLocalMessageIsNotSaidSent(t *testing.T) {
	t.Parallel()
	args := func(customer uuid.UUID) map[string]any {
		return map[string]any{"customer_id": customer, "channel": "sms", "template": "generic", "variables": map[string]any{"body": "See you soon"}}
	}
	local := setupDasha(t)
	phoned, err := local.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: local.tenant, Name: "Ana", Phone: "+442079460958"})
	if err != nil {
		t.Fatal(err)
	}
	a := decodeAnswer(t, local.call("send_message", "call-1", args(phoned.ID)))
	if a.Outcome != "confirmed" || !strings.Contains(a.Say, "recorded for the team") || !strings.Contains(a.Say, "NOT been sent") {
		t.Fatalf("send_message with the local outbox: %s", said(a))
	}
	if claims := sayClaims(a.Say); len(claims) > 0 {
		t.Fatalf("the local message's say claims %q: %s", claims, a.Say)
	}
	if n := local.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND body = 'See you soon'", phoned.ID); n != 1 {
		t.Fatalf("%d outbox rows, want 1", n)
	}
	status := decodeAnswer(t, local.call("check_action_status", "call-1", map[string]any{"action_id": a.ActionID}))
	if status.Say != a.Say {
		t.Fatalf("check_action_status says %q, the answer said %q", status.Say, a.Say)
	}

	sim := simtest.Start(t, providersim.Config{})
	remote := setupDasha(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Messaging: simProvider(sim)}
		c.ReconcileDisabled = true
	})
	phoned, err = remote.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: remote.tenant, Name: "Ana", Phone: "+442079460958"})
	if err != nil {
		t.Fatal(err)
	}
	sent := decodeAnswer(t, remote.call("send_message", "call-1", args(phoned.ID)))
	if sent.Outcome != "confirmed" || !strings.Contains(sent.Say, "on its way") {
		t.Fatalf("send_message through a provider: %s", said(sent))
	}
	if n := len(sim.Ledger(provider.Messaging)); n != 1 {
		t.Fatalf("the messaging provider holds %d messages, want 1", n)
	}

	// Once their answers are pruned, each is still said as it was.
	for _, e := range []dashaEnv{local, remote} {
		if _, err := e.Store.Pool().Exec(t.Context(), "UPDATE actions SET result = NULL, request = '{}'::jsonb WHERE operation = 'message.send'"); err != nil {
			t.Fatal(err)
		}
	}
	if got := decodeAnswer(t, local.call("check_action_status", "call-1", map[string]any{"action_id": a.ActionID})); got.Say != a.Say {
		t.Fatalf("the pruned local message: %s", said(got))
	}
	if got := decodeAnswer(t, remote.call("check_action_status", "call-1", map[string]any{"action_id": sent.ActionID})); got.Say != sent.Say {
		t.Fatalf("the pruned sent message: %s", said(got))
	}
}

// clinicSlot is a slot of Dr. Ortiz at Uptown (New York) for a clinic whose
// tenant is in London, on Friday 6 December 2030 at 14:00 in New York
// (19:00 in London).
type clinicSlot struct {
	slotClinic
	slot, customer uuid.UUID
	start          time.Time
}

func newClinicSlot(t *testing.T, e *apptest.Env, name string) clinicSlot {
	t.Helper()
	c := newSlotClinic(t, e, name, testOrg, "Europe/London")
	uptown := c.location("Uptown", "America/New_York")
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{uptown}, c.service("Cleaning", 30, 0))
	start := time.Date(2030, 12, 6, 14, 0, 0, 0, mustZone(t, "America/New_York"))
	cust, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: c.tenant, Name: "Ana", Phone: "+442079460958"})
	if err != nil {
		t.Fatal(err)
	}
	return clinicSlot{slotClinic: c, slot: c.slot(ortiz, uptown, start, 30), customer: cust.ID, start: start}
}

func (c clinicSlot) tool(name, callID string, args map[string]any) answer {
	c.t.Helper()
	return decodeAnswer(c.t, c.e.Post("/v1/dasha/tools/"+name, c.key, "", payload(name, callID, args)))
}

// bookedSays is what a confirmed booking's details must say of it.
type bookedSays struct {
	When         string `json:"when"`
	StartsAt     string `json:"starts_at"`
	Practitioner string `json:"practitioner"`
	Timezone     string `json:"timezone"`
}

// TestEveryConfirmedBookingSaysWhen: a booking confirmed by a remote
// calendar, and one an operator confirmed from evidence, are said like a
// local one: details carry when (the location's local time), starts_at and
// the practitioner, and the say points at them.
func TestEveryConfirmedBookingSaysWhen(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: simProvider(sim)}
		c.ReconcileDisabled = true // the operator settles the lost answer
		c.OperatorToken = operatorToken
	})
	c := newClinicSlot(t, e, "clinic")
	const when, startsAt = "Friday 6 December 2030 at 14:00", "2030-12-06T19:00:00Z"
	check := func(what string, a answer) {
		t.Helper()
		var got bookedSays
		decodeDetails(t, a, &got)
		if a.Outcome != "confirmed" || got.When != when || got.StartsAt != startsAt || got.Practitioner != "Dr. Ortiz" ||
			got.Timezone != "America/New_York" || !strings.Contains(a.Say, "when") {
			t.Fatalf("%s: %s; want when %q, starts_at %s, Dr. Ortiz", what, said(a), when, startsAt)
		}
	}
	booked := c.tool("book_appointment", "call-remote", map[string]any{"customer_id": c.customer, "slot_id": c.slot})
	check("booked on the remote calendar", booked)
	check("its status", c.tool("check_action_status", "call-remote", map[string]any{"action_id": booked.ActionID}))

	// A lost answer settled by an operator from the calendar's record.
	other := newClinicSlot(t, e, "other")
	sim.Fault(provider.Calendar, "drop_response", 1)
	lost := other.tool("book_appointment", "call-lost", map[string]any{"customer_id": other.customer, "slot_id": other.slot})
	if lost.Outcome != "pending" {
		t.Fatalf("lost answer: %s", said(lost))
	}
	ledger := sim.Ledger(provider.Calendar)
	if len(ledger) != 2 {
		t.Fatalf("the calendar holds %d bookings, want 2", len(ledger))
	}
	res := e.Post("/v1/ops/actions/"+lost.ActionID+"/resolve", operatorToken, "", map[string]any{
		"outcome": "confirmed", "provider_ref": ledger[1].ID, "note": "found in the calendar", "by": "ana",
	})
	if res.Status != http.StatusOK {
		t.Fatalf("resolve: %d %s", res.Status, res.Body)
	}
	check("confirmed by an operator", other.tool("check_action_status", "call-lost", map[string]any{"action_id": lost.ActionID}))
}

// localAppointments is the details of list_appointments and the body of
// GET /v1/appointments.
type listedAppointments struct {
	Appointments []struct {
		ID            string `json:"id"`
		When          string `json:"when"`
		StartsAtLocal string `json:"starts_at_local"`
		Timezone      string `json:"timezone"`
		Practitioner  string `json:"practitioner"`
	} `json:"appointments"`
}

// TestListedAtTheLocationsLocalTime: an appointment at a location in
// another zone than the tenant's is confirmed, listed (list_appointments,
// GET /v1/appointments) and texted to the customer at the same local time,
// the location's: 14:00 in New York, never 19:00 in London.
func TestListedAtTheLocationsLocalTime(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newClinicSlot(t, e, "clinic")
	const when, local = "Friday 6 December 2030 at 14:00", "2030-12-06T14:00:00-05:00"
	booked := c.tool("book_appointment", "call-1", map[string]any{"customer_id": c.customer, "slot_id": c.slot, "notify": "sms"})
	var got bookedSays
	decodeDetails(t, booked, &got)
	if booked.Outcome != "confirmed" || got.When != when {
		t.Fatalf("booked: %s", said(booked))
	}
	check := func(what string, l listedAppointments) {
		t.Helper()
		if len(l.Appointments) != 1 {
			t.Fatalf("%s: %+v", what, l)
		}
		a := l.Appointments[0]
		if a.When != when || a.StartsAtLocal != local || a.Timezone != "America/New_York" || a.Practitioner != "Dr. Ortiz" {
			t.Fatalf("%s: %+v; want when %q, starts_at_local %s in America/New_York with Dr. Ortiz", what, a, when, local)
		}
	}
	var listed listedAppointments
	decodeDetails(t, c.tool("list_appointments", "call-1", map[string]any{"customer_id": c.customer}), &listed)
	check("list_appointments", listed)
	r := e.Get("/v1/appointments?customer_id="+c.customer.String(), c.key)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/appointments: %d %s", r.Status, r.Body)
	}
	listed = listedAppointments{}
	if err := json.Unmarshal(r.Body, &listed); err != nil {
		t.Fatalf("GET /v1/appointments: %v: %s", err, r.Body)
	}
	check("GET /v1/appointments", listed)
	if n := e.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND body LIKE '%' || $2 || '%'", c.customer, when); n != 1 {
		var body string
		_ = e.Store.Pool().QueryRow(t.Context(), "SELECT body FROM messages WHERE customer_id = $1", c.customer).Scan(&body)
		t.Fatalf("the confirmation says %q; want %q", body, when)
	}
}

// TestTenantLocaleSpeaksDates: a tenant in Chicago hears American dates
// (month first, a 12-hour clock) in every answer and message: slots offered,
// the booking, the appointments listed, a callback's window, the
// confirmation text. The locale is the tenant's setting, not the zone's:
// set to en-GB, the same tenant hears British dates.
func TestTenantLocaleSpeaksDates(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "chicago", testOrg, "America/Chicago")
	start := time.Date(2030, 12, 6, 9, 30, 0, 0, mustZone(t, "America/Chicago"))
	slot := slotAt(t, e, c.tenant, start, "Chair")
	cust, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: c.tenant, Name: "Ana", Phone: "+13125550123"})
	if err != nil {
		t.Fatal(err)
	}
	cs := clinicSlot{slotClinic: c, customer: cust.ID}
	const american = "Friday, December 6, 2030 at 9:30 AM"

	_, offer := c.find(map[string]any{"date": "2030-12-06"})
	if len(offer.Slots) != 1 || offer.Slots[0].When != american {
		t.Fatalf("find_available_slots: %+v; want %q", offer, american)
	}
	booked := cs.tool("book_appointment", "call-1", map[string]any{"customer_id": cust.ID, "slot_id": slot, "notify": "sms"})
	var got bookedSays
	decodeDetails(t, booked, &got)
	if booked.Outcome != "confirmed" || got.When != american {
		t.Fatalf("book_appointment: %s; want %q", said(booked), american)
	}
	var listed listedAppointments
	decodeDetails(t, cs.tool("list_appointments", "call-1", map[string]any{"customer_id": cust.ID}), &listed)
	if len(listed.Appointments) != 1 || listed.Appointments[0].When != american {
		t.Fatalf("list_appointments: %+v; want %q", listed, american)
	}
	if n := e.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND body LIKE '%' || $2 || '%'", cust.ID, american); n != 1 {
		t.Fatalf("no confirmation text says %q", american)
	}
	callback := cs.tool("request_callback", "call-1", map[string]any{
		"customer_id": cust.ID, "window_start": "2030-12-06T09:30", "window_end": "2030-12-06T11:00", "reason": "a question",
	})
	if w := answerDetails(t, callback)["when"]; callback.Outcome != "confirmed" || w != "Friday, December 6, 2030 between 9:30 AM and 11:00 AM" {
		t.Fatalf("request_callback: %s", said(callback))
	}

	c.exec("UPDATE tenants SET locale = 'en-GB' WHERE id = $1", c.tenant)
	listed = listedAppointments{}
	decodeDetails(t, cs.tool("list_appointments", "call-2", map[string]any{"customer_id": cust.ID}), &listed)
	const british = "Friday 6 December 2030 at 09:30"
	if len(listed.Appointments) != 1 || listed.Appointments[0].When != british {
		t.Fatalf("list_appointments in en-GB: %+v; want %q", listed, british)
	}
}
