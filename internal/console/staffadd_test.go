package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
)

var shownLink = regexp.MustCompile(`id="link" readonly value="([^"]+)"`)

// An admin adds a colleague from the console, who signs in through the
// link shown; the admin makes a new link and disables someone: each is in
// the audit trail under the admin's name. Bad input adds no one, an admin
// of one tenant adds people of that tenant only, and the page offers no
// identity provider when none is configured.
func TestAdminManagesStaffFromTheConsole(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Riverside Clinic", time.Hour)
	other, _ := s.e.Tenant("Harbour Dental")
	s.person(t, "Nia Admin", "nia@clinic.example", oncecall.RoleAdmin, uuid.Nil)
	nia := s.signIn(t, "nia@clinic.example")

	page := send(t, nia, http.MethodGet, s.e.URL+"/console/staff", nil)
	if page.status != http.StatusOK || !strings.Contains(page.body, `id="add"`) || strings.Contains(page.body, "identity provider") {
		t.Fatalf("the staff page: %d, add form %v, offers an identity provider that is not configured %v",
			page.status, strings.Contains(page.body, `id="add"`), strings.Contains(page.body, "identity provider"))
	}
	for _, bad := range []url.Values{
		{"name": {"Ben"}, "email": {""}, "role": {"viewer"}},
		{"name": {""}, "email": {"ben@clinic.example"}, "role": {"viewer"}},
		{"name": {"Ben"}, "email": {"ben@clinic.example"}, "role": {"owner"}},
		{"name": {"Ben"}, "email": {"ben@clinic.example"}, "role": {"viewer"}, "tenant": {uuid.NewString()}},
	} {
		if a := send(t, nia, http.MethodPost, s.e.URL+"/console/staff", bad); a.status != http.StatusBadRequest || !strings.Contains(a.body, "Not added") {
			t.Fatalf("add %v: %d", bad, a.status)
		}
	}
	if n := s.e.Count(`SELECT count(*) FROM operators WHERE email = 'ben@clinic.example'`); n != 0 {
		t.Fatal("a refused form added someone")
	}

	a := send(t, nia, http.MethodPost, s.e.URL+"/console/staff", url.Values{"name": {"Ben Okafor"}, "email": {"Ben@Clinic.example"},
		"role": {"resolver"}, "tenant": {s.tenant.ID.String()}})
	m := shownLink.FindStringSubmatch(a.body)
	if a.status != http.StatusOK || m == nil {
		t.Fatalf("add Ben: %d, link shown %v", a.status, m != nil)
	}
	if n := s.e.Count(`SELECT count(*) FROM operators WHERE email = 'ben@clinic.example' AND role = 'resolver' AND tenant_id = $1`, s.tenant.ID); n != 1 {
		t.Fatal("Ben is not on the staff as a resolver of Riverside")
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'person_added' AND operator_name = 'Nia Admin' AND tenant_id = $1 AND detail->>'person' = 'Ben Okafor'`, s.tenant.ID); n != 1 {
		t.Fatal("adding Ben is not audited under Nia's name and his tenant")
	}
	welcome(t, html.UnescapeString(m[1]), "copper lantern meadow tuba")

	var ben uuid.UUID
	if err := s.e.Store.Pool().QueryRow(t.Context(), `SELECT id FROM operators WHERE email = 'ben@clinic.example'`).Scan(&ben); err != nil {
		t.Fatal(err)
	}
	a = send(t, nia, http.MethodPost, s.e.URL+"/console/staff/"+ben.String()+"/link", url.Values{})
	if a.status != http.StatusOK || shownLink.FindStringSubmatch(a.body) == nil {
		t.Fatalf("a new link for Ben: %d", a.status)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'link_made' AND operator_name = 'Nia Admin' AND detail->>'person' = 'Ben Okafor'`); n != 1 {
		t.Fatal("the new link is not audited")
	}
	if a := send(t, nia, http.MethodPost, s.e.URL+"/console/staff/"+ben.String()+"/disable", url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("disable Ben: %d", a.status)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'person_disabled' AND operator_name = 'Nia Admin'`); n != 1 {
		t.Fatal("disabling Ben is not audited")
	}
	if a := send(t, nia, http.MethodPost, s.e.URL+"/console/staff/"+ben.String()+"/link", url.Values{}); a.status != http.StatusNotFound {
		t.Fatalf("a link for a disabled person: %d", a.status)
	}

	// An admin of one tenant adds people of that tenant, whatever the form says.
	s.person(t, "Rita Local", "rita@clinic.example", oncecall.RoleAdmin, s.tenant.ID)
	rita := s.signIn(t, "rita@clinic.example")
	if a := send(t, rita, http.MethodPost, s.e.URL+"/console/staff", url.Values{"name": {"Cy Temp"}, "email": {"cy@clinic.example"},
		"role": {"viewer"}, "tenant": {other.ID.String()}}); a.status != http.StatusOK {
		t.Fatalf("a tenant's admin adds someone: %d", a.status)
	}
	if n := s.e.Count(`SELECT count(*) FROM operators WHERE email = 'cy@clinic.example' AND tenant_id = $1`, s.tenant.ID); n != 1 {
		t.Fatal("a tenant's admin added someone outside her tenant")
	}
}

// welcome spends a one-time sign-in link with a password, as the welcome
// form does, and checks that it signs the person in.
func welcome(t *testing.T, link, password string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	a := send(t, noRedirect(), http.MethodPost, u.Scheme+"://"+u.Host+"/console/welcome",
		url.Values{"t": {u.Query().Get("t")}, "password": {password}, "again": {password}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/" || !strings.HasPrefix(a.header.Get("Set-Cookie"), "oncecall_console=") {
		t.Fatalf("the sign-in link: %d %s", a.status, a.header.Get("Location"))
	}
}
