package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/staff"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"golang.org/x/crypto/bcrypt"
)

const operatorToken = "console-test-operator-token-7d2e94b1"

// stack is oncecall with the console, booking on the provider simulator's
// calendar; the reconciler is off so that a lost answer stays unknown
// until an operator settles it.
type stack struct {
	e      *apptest.Env
	sim    *simtest.Sim
	tenant oncecall.Tenant
	key    string
}

// keyRetention is how long the calendar keeps idempotency keys: past it a
// reconciler pass cannot prove what became of a write and sends the action
// to an operator.
func startStack(t *testing.T, tenantName string, keyRetention time.Duration) *stack {
	t.Helper()
	return startStackWith(t, tenantName, keyRetention)
}

// startStackWith is startStack with more configuration.
func startStackWith(t *testing.T, tenantName string, keyRetention time.Duration, more ...func(*app.Config)) *stack {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{KeyRetention: keyRetention})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{
			BaseURL: sim.URL, Timeout: 2 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: keyRetention, AuthoritativeLookup: true},
		})}
		c.ReconcileDisabled = true // the test runs passes itself
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond}
		c.OperatorToken = operatorToken
		for _, f := range more {
			f(c)
		}
	})
	tenant, key := e.Tenant(tenantName)
	return &stack{e: e, sim: sim, tenant: tenant, key: key}
}

// stuckBooking books on the remote calendar while the simulator drops its
// answer: the booking is written at the provider, and oncecall answers 202
// with the action unknown.
func (s *stack) stuckBooking(t *testing.T, idemKey string, slot int) uuid.UUID {
	t.Helper()
	return s.stuckBookingFor(t, idemKey, slot, s.e.Customer(s.tenant.ID))
}

func (s *stack) stuckBookingFor(t *testing.T, idemKey string, slot int, customer uuid.UUID) uuid.UUID {
	t.Helper()
	s.sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
	r := s.e.Post("/v1/appointments", s.key, idemKey, map[string]any{
		"customer_id": customer, "slot_id": s.e.Slot(s.tenant.ID, slot),
	})
	if r.Status != http.StatusAccepted {
		t.Fatalf("booking with a dropped answer: %d %s", r.Status, r.Body)
	}
	j := r.JSON(t)
	if j["state"] != "unknown" {
		t.Fatalf("booking with a dropped answer: %s", r.Body)
	}
	return uuid.MustParse(j["action_id"].(string))
}

// ledgerRef is the provider's reference of the write with the given
// provider key, from the simulator's ledger.
func (s *stack) ledgerRef(t *testing.T, providerKey string) string {
	t.Helper()
	for _, l := range s.sim.Ledger(provider.Calendar) {
		if l.Key == providerKey {
			return l.ID
		}
	}
	t.Fatalf("no calendar write with key %s in the ledger", providerKey)
	return ""
}

func (s *stack) providerKey(t *testing.T, id uuid.UUID) string {
	t.Helper()
	steps, err := s.e.Store.Steps(t.Context(), id)
	if err != nil || len(steps) != 1 {
		t.Fatalf("steps of %s: %v %v", id, steps, err)
	}
	return steps[0].ProviderKey
}

// signedInClient is a plain HTTP client (no browser) signed in to the console.
func (s *stack) signedInClient(t *testing.T, name string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(s.e.URL+"/console/signin", url.Values{"token": {operatorToken}, "name": {name}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Set-Cookie"), "oncecall_console=") {
		t.Fatalf("sign in: %d %v", resp.StatusCode, resp.Header)
	}
	return c
}

// reconcile runs one reconciler pass.
func (s *stack) reconcile(t *testing.T) {
	t.Helper()
	if _, err := s.e.Main.Reconciler().RunOnce(t.Context()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

// strongPassword is a password the console accepts.
const strongPassword = "correct horse battery staple 42"

// person adds a member of staff with strongPassword (hashed at bcrypt's
// least cost: a sign-in reads the cost from the hash) and returns their id.
func (s *stack) person(t *testing.T, name, email string, role oncecall.Role, tenant uuid.UUID) uuid.UUID {
	t.Helper()
	o, _, err := staff.New(staff.Config{Store: s.e.Store, Cost: bcrypt.MinCost}).Add(t.Context(),
		oncecall.Actor{Name: "test", Via: oncecall.ViaCommand},
		staff.Person{Name: name, Email: email, Role: role, TenantID: tenant, Password: strongPassword})
	if err != nil {
		t.Fatalf("add %s: %v", email, err)
	}
	return o.ID
}

// signIn is a plain HTTP client signed in as the person with this e-mail.
func (s *stack) signIn(t *testing.T, email string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(s.e.URL+"/console/signin", url.Values{"email": {email}, "password": {strongPassword}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in as %s: %d", email, resp.StatusCode)
	}
	return c
}

// stuckFor books for a customer of another tenant (with its API key) while
// the simulator drops the answer.
func (s *stack) stuckFor(t *testing.T, tenant uuid.UUID, key, idemKey string, slot int, customer uuid.UUID) uuid.UUID {
	t.Helper()
	s.sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
	r := s.e.Post("/v1/appointments", key, idemKey, map[string]any{"customer_id": customer, "slot_id": s.e.Slot(tenant, slot)})
	if r.Status != http.StatusAccepted {
		t.Fatalf("booking with a dropped answer: %d %s", r.Status, r.Body)
	}
	return uuid.MustParse(r.JSON(t)["action_id"].(string))
}
