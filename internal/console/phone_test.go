package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/db"
)

// A receptionist finds a caller by the number as she writes it in her own
// country, and the action's page shows it that way (its call link stays
// E.164); a London clinic's number is read the London way, and a number of
// another country is shown internationally.
func TestPhoneSearchAsTheFrontDeskTypesIt(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Hudson Clinic", time.Hour)
	ctx := t.Context()
	zone := "America/New_York"
	if _, _, err := s.e.Store.UpdateTenantClock(ctx, s.tenant.ID, db.ClockChange{Timezone: &zone}); err != nil {
		t.Fatal(err)
	}
	lucy, err := s.e.Store.CreateCustomer(ctx, db.NewCustomer{TenantID: s.tenant.ID, Name: "Lucy Park", Phone: "+12125550199"})
	if err != nil {
		t.Fatal(err)
	}
	visitor, err := s.e.Store.CreateCustomer(ctx, db.NewCustomer{TenantID: s.tenant.ID, Name: "Tom Visitor", Phone: "+447700900123"})
	if err != nil {
		t.Fatal(err)
	}
	booked := s.stuckBookingFor(t, "lucy-1", 1, lucy.ID)
	abroad := s.stuckBookingFor(t, "tom-1", 2, visitor.ID)
	london, londonKey := s.e.Tenant("Thames Clinic")
	lz := "Europe/London"
	if _, _, err := s.e.Store.UpdateTenantClock(ctx, london.ID, db.ClockChange{Timezone: &lz}); err != nil {
		t.Fatal(err)
	}
	maria, err := s.e.Store.CreateCustomer(ctx, db.NewCustomer{TenantID: london.ID, Name: "Maria Lopez", Phone: "+447700900123"})
	if err != nil {
		t.Fatal(err)
	}
	hers := s.stuckFor(t, london.ID, londonKey, "maria-1", 3, maria.ID)
	ops := s.signedInClient(t, "Ana")

	search := func(q string) string {
		t.Helper()
		a := send(t, ops, http.MethodGet, s.e.URL+"/console/search?"+url.Values{"q": {q}}.Encode(), nil)
		if a.status != http.StatusOK {
			t.Fatalf("search %q: %d", q, a.status)
		}
		return a.body
	}
	for _, q := range []string{"212-555-0199", "2125550199", "(212) 555-0199", "+1 212 555 0199", "12125550199"} {
		if body := search(q); !strings.Contains(body, "Lucy Park") || !strings.Contains(body, booked.String()) {
			t.Errorf("search %q does not find Lucy Park and her booking", q)
		}
	}
	// The London clinic's national form finds its caller, not the New
	// York clinic's visitor with the same number.
	body := search("07700 900123")
	if !strings.Contains(body, "Maria Lopez") || !strings.Contains(body, hers.String()) || strings.Contains(body, abroad.String()) {
		t.Errorf("search 07700 900123: Maria Lopez %v, her booking %v, the New York visitor's %v",
			strings.Contains(body, "Maria Lopez"), strings.Contains(body, hers.String()), strings.Contains(body, abroad.String()))
	}
	if body := search("+44 7700 900123"); !strings.Contains(body, hers.String()) || !strings.Contains(body, abroad.String()) {
		t.Error("search +44 7700 900123 does not find both tenants' callers with that number")
	}

	page := send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+booked.String(), nil)
	// html/template writes the + of the tel: link as &#43;.
	if !strings.Contains(page.body, `href="tel:&#43;12125550199"`) || !strings.Contains(page.body, "Call (212) 555-0199") {
		t.Errorf("the New York caller's page does not offer to call (212) 555-0199 on tel:+12125550199")
	}
	page = send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+abroad.String(), nil)
	if !strings.Contains(page.body, "Call &#43;44 7700 900123") { // html/template's +
		t.Errorf("the visitor's number is not shown in international form")
	}
	page = send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+hers.String(), nil)
	if !strings.Contains(page.body, "Call 07700 900123") {
		t.Errorf("the London caller's number is not shown the London way")
	}
}
