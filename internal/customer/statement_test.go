package customer_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/customer"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/wire"
)

// check fails unless a is outcome with reason and status and its body is
// want.
func check(t *testing.T, name string, a oncecall.Action, outcome oncecall.Outcome, reason string, status int, want []byte) {
	t.Helper()
	if a.State != oncecall.Completed || a.Outcome != outcome || a.Reason != reason || a.Status != status {
		t.Errorf("%s: %s %s %s %d, want completed %s %s %d", name, a.State, a.Outcome, a.Reason, a.Status, outcome, reason, status)
	}
	if (a.ResourceID != "") != (outcome == oncecall.Confirmed) {
		t.Errorf("%s: resource id %q", name, a.ResourceID)
	}
	if !bytes.Equal(a.Result, want) {
		t.Errorf("%s: answer\n %s\nwant\n %s", name, a.Result, want)
	}
}

// customerNow is the answer's JSON of customer id as it is stored,
// written by the wire converter the API answers with: the JSON the
// ClaimAnd... statements spell in SQL (queries/customers.sql) must be that,
// byte for byte.
func (e env) customerNow(t *testing.T, id string) []byte {
	t.Helper()
	c, err := e.Store.CustomerByID(t.Context(), e.Tenant, op.MustUUID(id))
	if err != nil {
		t.Fatal(err)
	}
	return answerOf(t, wire.FromCustomer(c))
}

// made creates a customer.
func (e env) made(t *testing.T, name, phone, email, ref string) uuid.UUID {
	t.Helper()
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: e.Tenant, Name: name, Phone: phone, Email: email, ExternalRef: ref})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// A points change is confirmed with the ledger entry, or rejected naming
// the customer (and the balance when it is too small).
func TestPointsOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	withBalance := func(points int64) uuid.UUID {
		id := e.made(t, "Ana", "", "", "")
		if points != 0 {
			if _, ok, err := e.Store.AddPoints(t.Context(), db.PointsChange{TenantID: e.Tenant, ActionID: uuid.New(), CustomerID: id, Delta: points, Reason: "start"}); err != nil || !ok {
				t.Fatalf("starting balance: %v %v", ok, err)
			}
		}
		return id
	}
	missing, poor := uuid.New(), withBalance(10)
	for _, c := range []struct {
		name     string
		customer uuid.UUID
		delta    int64
		reason   string
		outcome  oncecall.Outcome
		code     string
		body     map[string]any
	}{
		{"add", withBalance(0), 25, "visit", oncecall.Confirmed, "", nil},
		{"redeem", withBalance(40), -30, "free coffee", oncecall.Confirmed, "", nil},
		{"text to escape", withBalance(0), 5, `<birthday & "bonus"> é`, oncecall.Confirmed, "", nil},
		{"insufficient", poor, -30, "free lunch", oncecall.Rejected, customer.InsufficientPoints,
			map[string]any{"balance": 10, "customer_id": poor, "delta": -30}},
		{"customer missing", missing, 5, "visit", oncecall.Rejected, customer.NotFound, map[string]any{"customer_id": missing}},
	} {
		a := e.Run(t, customer.AddPoints, map[string]any{"customer_id": c.customer, "delta": c.delta, "reason": c.reason})
		if c.body != nil {
			check(t, c.name, a, c.outcome, c.code, http.StatusUnprocessableEntity, answerOf(t, c.body))
			continue
		}
		var entry oncecall.PointsEntry
		if err := e.Store.Pool().QueryRow(t.Context(), `SELECT id, customer_id, delta, reason, balance_after, created_at
			FROM points_ledger WHERE action_id = $1`, a.ID).Scan(&entry.ID, &entry.CustomerID, &entry.Delta, &entry.Reason, &entry.Balance, &entry.CreatedAt); err != nil {
			t.Fatalf("%s: the ledger entry: %v", c.name, err)
		}
		entry.CreatedAt = entry.CreatedAt.UTC()
		check(t, c.name, a, c.outcome, c.code, http.StatusCreated, answerOf(t, wire.FromPointsEntry(entry)))
		if entry.CustomerID != c.customer || entry.Delta != c.delta || entry.Reason != c.reason {
			t.Errorf("%s: ledger entry %+v", c.name, entry)
		}
	}
}

// A note is confirmed with the note as stored, or rejected naming the
// customer.
func TestNoteOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	missing := uuid.New()
	for _, c := range []struct {
		name     string
		customer uuid.UUID
		text     string
		outcome  oncecall.Outcome
	}{
		{"confirmed", e.made(t, "Ana", "", "", ""), "Prefers mornings", oncecall.Confirmed},
		{"confirmed, text to escape", e.made(t, "Ana", "", "", ""), "<Allergic> to \"latex\" & nuts\né\u2028", oncecall.Confirmed},
		{"customer missing", missing, "Prefers mornings", oncecall.Rejected},
	} {
		a := e.Run(t, customer.AppendNote, map[string]any{"customer_id": c.customer, "text": c.text})
		if c.outcome == oncecall.Rejected {
			check(t, c.name, a, c.outcome, customer.NotFound, http.StatusUnprocessableEntity, answerOf(t, map[string]any{"customer_id": c.customer}))
			continue
		}
		var note oncecall.Note
		if err := e.Store.Pool().QueryRow(t.Context(), `SELECT id, customer_id, text, created_at FROM customer_notes WHERE action_id = $1`,
			a.ID).Scan(&note.ID, &note.CustomerID, &note.Text, &note.CreatedAt); err != nil {
			t.Fatalf("%s: the note: %v", c.name, err)
		}
		note.CreatedAt = note.CreatedAt.UTC()
		check(t, c.name, a, c.outcome, "", http.StatusCreated, answerOf(t, wire.FromNote(note)))
		if note.CustomerID != c.customer {
			t.Errorf("%s: the note of customer %s", c.name, note.CustomerID)
		}
	}
}

// A customer is created and confirmed with its record, or rejected naming
// the customer already on file with the phone (first) or reference.
func TestCreateCustomerOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	phoneHolder := e.made(t, "On file", "+442079460810", "", "")
	refHolder := e.made(t, "On file", "", "", "ref-1")
	bothPhone := e.made(t, "On file", "+442079460710", "", "")
	e.made(t, "On file", "", "", "both-1")
	for _, c := range []struct {
		name    string
		input   map[string]any
		outcome oncecall.Outcome
		body    map[string]any
	}{
		{"all fields", map[string]any{"name": "Ana <Lima> & co", "phone": "+442079460910", "email": "ana1@example.com", "external_ref": "crm-1"}, oncecall.Confirmed, nil},
		{"name only", map[string]any{"name": "Bo"}, oncecall.Confirmed, nil},
		{"phone on file", map[string]any{"name": "Ana", "phone": "+442079460810", "external_ref": "other-1"}, oncecall.Rejected,
			map[string]any{"customer_id": phoneHolder, "field": "phone"}},
		{"reference on file", map[string]any{"name": "Ana", "external_ref": "ref-1"}, oncecall.Rejected,
			map[string]any{"customer_id": refHolder, "field": "external_ref"}},
		{"phone first when both are on file", map[string]any{"name": "Ana", "phone": "+442079460710", "external_ref": "both-1"}, oncecall.Rejected,
			map[string]any{"customer_id": bothPhone, "field": "phone"}},
	} {
		a := e.Run(t, customer.Create, c.input)
		if c.body != nil {
			check(t, c.name, a, c.outcome, customer.Exists, http.StatusUnprocessableEntity, answerOf(t, c.body))
			continue
		}
		check(t, c.name, a, c.outcome, "", http.StatusCreated, e.customerNow(t, a.ResourceID))
	}
	if n := e.Count(t, "SELECT count(*) FROM customers WHERE tenant_id = $1", e.Tenant); n != 6 {
		t.Errorf("%d customers, want 6", n)
	}
}

// A customer's change is confirmed with the record as changed, or rejected
// naming the missing customer or the other customer holding the phone or
// reference.
func TestUpdateCustomerOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	missing := uuid.New()
	phoneOther, refOther := e.made(t, "Other", "+442079460510", "", ""), e.made(t, "Other", "", "", "d-1")
	for _, c := range []struct {
		name     string
		customer uuid.UUID
		input    map[string]any
		outcome  oncecall.Outcome
		reason   string
		body     map[string]any
	}{
		{"every field", e.made(t, "Ana", "+442079460110", "x@example.com", "a-1"),
			map[string]any{"name": "Ana <B> & C", "phone": "+442079460210", "email": "new1@example.com", "external_ref": "b-1"}, oncecall.Confirmed, "", nil},
		{"fields removed", e.made(t, "Ana", "+442079460310", "x@example.com", "c-1"),
			map[string]any{"phone": nil, "email": nil, "external_ref": nil}, oncecall.Confirmed, "", nil},
		{"its own phone again", e.made(t, "Ana", "+442079460410", "x@example.com", ""), map[string]any{"phone": "+442079460410"}, oncecall.Confirmed, "", nil},
		{"missing", missing, map[string]any{"name": "Bo"}, oncecall.Rejected, customer.NotFound, map[string]any{"customer_id": missing}},
		{"phone on another", e.made(t, "Ana", "", "x@example.com", ""), map[string]any{"phone": "+442079460510"}, oncecall.Rejected, customer.Exists,
			map[string]any{"customer_id": phoneOther, "field": "phone"}},
		{"reference on another", e.made(t, "Ana", "", "x@example.com", ""), map[string]any{"external_ref": "d-1"}, oncecall.Rejected, customer.Exists,
			map[string]any{"customer_id": refOther, "field": "external_ref"}},
	} {
		c.input["customer_id"] = c.customer
		a := e.Run(t, customer.Update, c.input)
		if c.body != nil {
			check(t, c.name, a, c.outcome, c.reason, http.StatusUnprocessableEntity, answerOf(t, c.body))
			continue
		}
		check(t, c.name, a, c.outcome, "", http.StatusOK, e.customerNow(t, c.customer.String()))
	}
}
