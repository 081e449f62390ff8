package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// A copy of the session cookie taken before signing out is refused
// afterwards: signing out ends the session, not only the browser's cookie.
func TestSignOutEndsACopiedSession(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Copied Cookie Clinic", time.Hour)
	ops := s.signedInClient(t, "Ana")
	u, _ := url.Parse(s.e.URL + "/console/")
	cookies := ops.Jar.Cookies(u)
	if len(cookies) != 1 {
		t.Fatalf("cookies after signing in: %v", cookies)
	}
	copied := cookies[0].Name + "=" + cookies[0].Value
	if a := send(t, noRedirect(), http.MethodGet, s.e.URL+"/console/", nil, "Cookie", copied); a.status != http.StatusOK {
		t.Fatalf("the copied cookie before signing out: %d", a.status)
	}
	if a := send(t, ops, http.MethodPost, s.e.URL+"/console/signout", url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", a.status)
	}
	a := send(t, noRedirect(), http.MethodGet, s.e.URL+"/console/", nil, "Cookie", copied)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/signin" {
		t.Fatalf("the copied cookie after signing out: %d %s, want 303 to /console/signin", a.status, a.header.Get("Location"))
	}
}

// An action's page names the customer with a link to call them, as
// docs/console.md says it does.
func TestActionPageShowsTheCustomersContactDetails(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Contact Clinic", time.Hour)
	cust, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{
		TenantID: s.tenant.ID, Name: "Maria Lopez", Phone: "+15550100777", Email: "maria@example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	id := s.stuckBookingFor(t, "contact-book-1", 1, cust.ID)
	a := send(t, s.signedInClient(t, "Ana"), http.MethodGet, s.e.URL+"/console/actions/"+id.String(), nil)
	// html/template writes the + of the tel: link as &#43;.
	for _, want := range []string{"Maria Lopez", `href="tel:(\+|&#43;)15550100777"`} {
		if a.status != http.StatusOK || !regexp.MustCompile(want).MatchString(a.body) {
			t.Fatalf("the action's page has no %s: %d", want, a.status)
		}
	}
}

// A booking a Vapi call left unknown is labelled as Vapi's, not Dasha's.
func TestActionPageNamesTheVoicePlatform(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Vapi Clinic", time.Hour)
	s.sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
	body := `{"message":{"type":"tool-calls","call":{"id":"vapi-call-42"},"toolCallList":[{"id":"t1","function":` +
		`{"name":"book_appointment","arguments":{"customer_id":"` + s.e.Customer(s.tenant.ID).String() +
		`","slot_id":"` + s.e.Slot(s.tenant.ID, 1).String() + `"}}}]}}`
	if r := s.e.Post("/v1/vapi/webhook", s.key, "", body); r.Status != http.StatusOK {
		t.Fatalf("vapi tool call: %d %s", r.Status, r.Body)
	}
	var id string
	if err := s.e.Store.Pool().QueryRow(t.Context(), `SELECT id::text FROM actions WHERE tenant_id = $1 AND operation = 'appointment.book'`,
		s.tenant.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	a := send(t, s.signedInClient(t, "Ana"), http.MethodGet, s.e.URL+"/console/actions/"+id, nil)
	if got := regexp.MustCompile(`<dd id="platform">[^<]*</dd>`).FindString(a.body); a.status != http.StatusOK || got != `<dd id="platform">Vapi</dd>` {
		t.Fatalf("the platform of a Vapi call's action: %d %s", a.status, got)
	}
}

// A search for a customer lists every operation of hers: her charge too,
// whose request names her payment intent, not her.
func TestCustomerSearchListsHerCharge(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Charge Clinic", time.Hour)
	cust, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: s.tenant.ID, Name: "Maria Lopez", Phone: "+15550100778"})
	if err != nil {
		t.Fatal(err)
	}
	r := s.e.Post("/v1/payment-intents", s.key, "intent-1", map[string]any{"customer_id": cust.ID, "amount": 4500, "currency": "EUR"})
	if r.Status != http.StatusCreated {
		t.Fatalf("payment intent: %d %s", r.Status, r.Body)
	}
	intent := r.JSON(t)["result"].(map[string]any)["id"].(string)
	// Without a payments provider the charge is refused (nothing charged),
	// and it is still one of her operations.
	r = s.e.Post("/v1/payments", s.key, "charge-1", map[string]any{"payment_intent_id": intent})
	if r.Status != http.StatusCreated && r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("charge: %d %s", r.Status, r.Body)
	}
	charge := r.JSON(t)["action_id"].(string)
	a := send(t, s.signedInClient(t, "Ana"), http.MethodGet, s.e.URL+"/console/search?"+url.Values{"q": {"+15550100778"}}.Encode(), nil)
	if a.status != http.StatusOK || !strings.Contains(a.body, charge) {
		t.Fatalf("searching her phone does not list her charge %s: %d", charge, a.status)
	}
}

// The queue refreshes with its filters: the address it fetches its rows
// from keeps them (state=unknown), not escaped into one value.
func TestQueueRefreshKeepsItsFilters(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Filter Clinic", time.Hour)
	a := send(t, s.signedInClient(t, "Ana"), http.MethodGet, s.e.URL+"/console/?state=unknown&age=5m", nil)
	src := regexp.MustCompile(`data-src="([^"]*)"`).FindStringSubmatch(a.body)
	if a.status != http.StatusOK || src == nil || (src[1] != "/console/queue?age=5m&amp;state=unknown" && src[1] != "/console/queue?age=5m&state=unknown") {
		t.Fatalf("the queue refreshes from %v", src)
	}
}
