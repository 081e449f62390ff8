package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestDashaReturningCallerMovesTheirAppointment drives the most common call
// a business gets, over the Dasha route with the payloads Dasha sends: a
// returning caller is recognised by the number they call from, hears their
// appointment, picks a new time, has the appointment moved and gets a
// confirmation text. Another tenant has a customer with the same phone
// number, an appointment and earlier free slots: none of it may appear in
// any answer, and none of its rows may change.
func TestDashaReturningCallerMovesTheirAppointment(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	ctx := t.Context()
	const phone = "+447700900123"
	salon, key := zonedTenant(t, e, "salon", testOrg, "Europe/London")
	rival, rivalKey := zonedTenant(t, e, "rival", "org_rival", "America/New_York")
	ana, err := e.Store.CreateCustomer(ctx, db.NewCustomer{TenantID: salon.ID, Name: "Ana Lima", Phone: phone, Email: "ana@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := e.Store.CreateCustomer(ctx, db.NewCustomer{TenantID: rival.ID, Name: "Bob Rival", Phone: phone, Email: "bob@rival.example"})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Truncate(time.Hour).Add(72 * time.Hour)
	oldSlot := slotAt(t, e, salon.ID, base, "Chair 1")
	newSlot := slotAt(t, e, salon.ID, base.Add(26*time.Hour), "Chair 1")
	laterSlot := slotAt(t, e, salon.ID, base.Add(50*time.Hour), "Chair 2")
	appointment := bookREST(t, e, key, ana.ID, oldSlot)
	// The rival's slots come first in time: a query that forgot the tenant
	// would offer them before the salon's.
	rivalBooked := slotAt(t, e, rival.ID, base.Add(-2*time.Hour), "Desk")
	rivalFree := slotAt(t, e, rival.ID, base.Add(-time.Hour), "Desk")
	rivalAppointment := bookREST(t, e, rivalKey, bob.ID, rivalBooked)

	// Nothing of the rival may show; the reads never read back contact details.
	foreign := []string{rival.ID.String(), bob.ID.String(), rivalBooked.String(), rivalFree.String(), rivalAppointment, "Bob", "rival"}
	private := []string{"7700900123", "7700 900123", "ana@example.com"}
	callID := "call_returning_1"
	// turn posts one tool call as Dasha does: the caller's number in
	// endpoint, SIP details the tools do not need.
	turn := func(tool string, args map[string]any) answer {
		t.Helper()
		body := payload(tool, callID, args)
		body["endpoint"] = phone
		body["sip"] = map[string]any{"fromUser": phone, "fromDomain": "sip.carrier.example", "toUser": "salon", "toDomain": "pbx.example", "diversion": []any{}}
		r := e.Post("/v1/dasha/tools/"+tool, key, "", body)
		for _, s := range append(foreign, private...) {
			if strings.Contains(string(r.Body), s) {
				t.Errorf("%s answered with %q, which it must not show: %s", tool, s, r.Body)
			}
		}
		return decodeAnswer(t, r)
	}

	// 1. Who is calling? No argument: the number the call comes from.
	found := turn("find_customer", map[string]any{})
	var who struct {
		Customers []struct {
			CustomerID string `json:"customer_id"`
			Name       string `json:"name"`
			HasPhone   bool   `json:"has_phone"`
			HasEmail   bool   `json:"has_email"`
		} `json:"customers"`
		PhoneSource string `json:"phone_source"`
	}
	decodeDetails(t, found, &who)
	if found.Outcome != "confirmed" || found.ActionID != "" || who.PhoneSource != "call" || len(who.Customers) != 1 {
		t.Fatalf("find_customer: %+v", found)
	}
	if c := who.Customers[0]; c.CustomerID != ana.ID.String() || c.Name != "Ana Lima" || !c.HasPhone || !c.HasEmail {
		t.Fatalf("find_customer found %+v, want Ana of the salon", c)
	}
	if !strings.Contains(found.Say, "calling from is on file") || !strings.Contains(found.Say, "confirm") {
		t.Errorf("find_customer say: %s", found.Say)
	}

	// 2. "I'd like to move my appointment."
	listed := turn("list_appointments", map[string]any{"customer_id": who.Customers[0].CustomerID})
	var appts struct {
		CustomerID   string `json:"customer_id"`
		Timezone     string `json:"timezone"`
		Appointments []struct {
			ID            string `json:"id"`
			SlotID        string `json:"slot_id"`
			Service       string `json:"service"`
			StartsAtLocal string `json:"starts_at_local"`
			When          string `json:"when"`
		} `json:"appointments"`
	}
	decodeDetails(t, listed, &appts)
	london, _ := schedule.NewClock("Europe/London", "en-GB")
	if listed.Outcome != "confirmed" || appts.Timezone != "Europe/London" || len(appts.Appointments) != 1 {
		t.Fatalf("list_appointments: %+v", listed)
	}
	if a := appts.Appointments[0]; a.ID != appointment || a.SlotID != oldSlot.String() || a.Service != "Haircut" ||
		a.When != london.Spoken(base, time.Now()) || a.StartsAtLocal != base.In(london.Loc).Format(time.RFC3339) {
		t.Fatalf("list_appointments listed %+v", a)
	}

	// 3. "What else do you have?"
	offered := turn("find_available_slots", map[string]any{})
	var free struct {
		Timezone string `json:"timezone"`
		Slots    []struct {
			ID   string `json:"id"`
			When string `json:"when"`
		} `json:"slots"`
	}
	decodeDetails(t, offered, &free)
	if offered.Outcome != "confirmed" || free.Timezone != "Europe/London" || len(free.Slots) != 2 ||
		free.Slots[0].ID != newSlot.String() || free.Slots[1].ID != laterSlot.String() {
		t.Fatalf("find_available_slots: %+v", offered)
	}
	chosen := free.Slots[0]
	if chosen.When != london.Spoken(base.Add(26*time.Hour), time.Now()) || strings.Contains(offered.Say, "UTC;") {
		t.Errorf("the slot is not offered in local time: %+v, say %s", chosen, offered.Say)
	}

	// 4. "The first one, please."
	moved := turn("reschedule_appointment", map[string]any{"appointment_id": appts.Appointments[0].ID, "slot_id": chosen.ID})
	if moved.Outcome != "confirmed" || moved.ActionID == "" {
		t.Fatalf("reschedule_appointment: %+v", moved)
	}

	// 5. "Can you text me the new time?"
	texted := turn("send_message", map[string]any{
		"customer_id": ana.ID, "channel": "sms", "template": "appointment_confirmation",
		"variables": map[string]any{"name": "Ana", "when": chosen.When}, "subject_id": appointment,
	})
	if texted.Outcome != "confirmed" || texted.ActionID == "" {
		t.Fatalf("send_message: %+v", texted)
	}

	// The rows: the appointment moved, its old slot is free again, one text
	// to Ana with the new time, and the rival's records untouched.
	if n := e.Count("SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2 AND status = 'active'", appointment, newSlot); n != 1 {
		t.Fatal("the appointment is not on the new slot")
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1 AND status = 'active'", oldSlot); n != 0 {
		t.Fatal("the old slot is still booked")
	}
	if n := e.Count("SELECT count(*) FROM messages WHERE tenant_id = $1", salon.ID); n != 1 {
		t.Fatalf("the salon's messages = %d, want 1", n)
	}
	if n := e.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND customer_id = $2 AND recipient = $3 AND channel = 'sms'
		AND template = 'appointment_confirmation' AND subject_id = $4 AND strpos(body, $5) > 0`,
		salon.ID, ana.ID, phone, appointment, chosen.When); n != 1 {
		t.Fatal("no confirmation text to Ana naming the new time")
	}
	if n := e.Count("SELECT count(*) FROM messages WHERE tenant_id = $1 OR customer_id = $2", rival.ID, bob.ID); n != 0 {
		t.Fatalf("the rival has %d messages", n)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2 AND status = 'active'", rivalAppointment, rivalBooked); n != 1 {
		t.Fatal("the rival's appointment changed")
	}
	// The reads claimed nothing: the booking, the move and the text are the salon's only actions.
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", salon.ID); n != 3 {
		t.Fatalf("the salon has %d actions, want 3", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", rival.ID); n != 1 {
		t.Fatalf("the rival has %d actions, want its one booking", n)
	}
	if logs := e.Logs.String(); strings.Contains(logs, "7700900123") || strings.Contains(logs, "Ana Lima") {
		t.Error("the logs contain the caller's number or name")
	}
}
