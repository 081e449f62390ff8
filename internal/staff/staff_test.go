package staff_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/staff"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
	"github.com/oncecall/oncecall/internal/tokenguard"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const strong = "correct horse battery staple 42"

var admin = oncecall.Actor{Name: "setup", Via: oncecall.ViaCommand}

func setup(t *testing.T) (*staff.Staff, *db.Store) {
	t.Helper()
	store := db.New(pgtest.NewPool(t))
	return staff.New(staff.Config{Store: store, Cost: 4}), store
}

// Weak passwords are refused with why, and nothing is stored.
func TestWeakPasswordsAreRefused(t *testing.T) {
	t.Parallel()
	for _, pw := range []string{"short", "password1234", "ana.ruiz.2026", "qwertyuiopasdf", "aaaaaaaaaaaaaaaa", string(make([]byte, 80))} {
		if err := staff.CheckPassword(pw, "Ana Ruiz", "ana.ruiz@example.com"); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%q was accepted: %v", pw, err)
		}
	}
	if err := staff.CheckPassword(strong, "Ana Ruiz", "ana@example.com"); err != nil {
		t.Fatalf("a passphrase was refused: %v", err)
	}
	st, store := setup(t)
	_, _, err := st.Add(t.Context(), admin, staff.Person{Name: "Ana", Email: "ana@example.com", Role: oncecall.RoleResolver, Password: "password1234"})
	if fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("adding someone with a weak password: %v", err)
	}
	if _, err := store.OperatorByEmail(t.Context(), "ana@example.com"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a refused person was stored: %v", err)
	}
}

// A person added without a password gets a link that works once, where a
// weak password is refused without spending the link; then they sign in
// with the password they chose, and the hash is bcrypt's, not the password.
func TestSignInLinkWorksOnce(t *testing.T) {
	t.Parallel()
	st, store := setup(t)
	ctx := t.Context()
	o, link, err := st.Add(ctx, admin, staff.Person{Name: "Ana Ruiz", Email: " Ana@Example.com", Role: oncecall.RoleViewer})
	if err != nil || link == "" || o.Email != "ana@example.com" {
		t.Fatalf("add: %+v %q %v", o, link, err)
	}
	if _, err := st.UseLink(ctx, link, "ana ruiz 2026"); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("a weak password through the link: %v", err)
	}
	if ok, err := st.LinkValid(ctx, link); !ok || err != nil {
		t.Fatalf("a refused password spent the link: %v %v", ok, err)
	}
	sg, err := st.UseLink(ctx, link, strong)
	if err != nil || sg.Session.Actor.OperatorID != o.ID || sg.Session.Actor.Via != oncecall.ViaLink {
		t.Fatalf("use the link: %+v %v", sg, err)
	}
	if _, err := st.UseLink(ctx, link, strong+"!"); fault.CodeOf(err) != fault.NotFound {
		t.Fatalf("the link used twice: %v", err)
	}
	p, err := store.OperatorByEmail(ctx, "ana@example.com")
	if err != nil || p.PasswordHash == "" || p.PasswordHash == strong || p.PasswordHash[:4] != "$2a$" {
		t.Fatalf("the stored hash: %q %v", p.PasswordHash, err)
	}
	if sg, wait, err := st.SignIn(ctx, "192.0.2.1:1", "ANA@example.com", strong); err != nil || wait != 0 || sg.Secret == "" {
		t.Fatalf("sign in with the chosen password: %v %v", wait, err)
	}
}

// Signing out ends the session on the server: its secret is refused from
// then on; an admin ending someone's sessions, or disabling them, ends
// every session of theirs. Each is in the audit trail.
func TestSessionsEndOnTheServer(t *testing.T) {
	t.Parallel()
	st, store := setup(t)
	ctx := t.Context()
	o, _, err := st.Add(ctx, admin, staff.Person{Name: "Bo", Email: "bo@example.com", Role: oncecall.RoleAdmin, Password: strong})
	if err != nil {
		t.Fatal(err)
	}
	sign := func() string {
		t.Helper()
		sg, _, err := st.SignIn(ctx, "192.0.2.2:1", "bo@example.com", strong)
		if err != nil {
			t.Fatal(err)
		}
		return sg.Secret
	}
	first, second, third := sign(), sign(), sign()
	if err := st.SignOut(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Session(ctx, first); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a signed-out session: %v", err)
	}
	if s, err := st.Session(ctx, second); err != nil || s.Role != oncecall.RoleAdmin || s.Actor.Name != "Bo" {
		t.Fatalf("another session of the same person: %+v %v", s, err)
	}
	if n, err := st.EndSessions(ctx, admin, o.ID); err != nil || n != 2 {
		t.Fatalf("end sessions: %d %v", n, err)
	}
	for _, s := range []string{second, third} {
		if _, err := st.Session(ctx, s); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("a session an admin ended: %v", err)
		}
	}
	fourth := sign()
	if err := st.Disable(ctx, admin, o.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Session(ctx, fourth); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("the session of a disabled person: %v", err)
	}
	if _, _, err := st.SignIn(ctx, "192.0.2.2:1", "bo@example.com", strong); !errors.Is(err, staff.ErrWrongPassword) {
		t.Fatalf("a disabled person signs in: %v", err)
	}
	entries, err := store.Audit(ctx, db.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range entries {
		kinds[e.Kind]++
	}
	if kinds["signed_in"] != 4 || kinds["signed_out"] != 1 || kinds["sessions_ended"] != 1 || kinds["person_disabled"] != 1 || kinds["person_added"] != 1 {
		t.Fatalf("audit: %v", kinds)
	}
}

// Wrong passwords of one account are slowed whatever the address; while
// it waits even the right password is not checked; an unknown account is
// refused like a wrong password.
func TestSignInIsThrottledPerAccount(t *testing.T) {
	t.Parallel()
	store := db.New(pgtest.NewPool(t))
	now := time.Unix(1_800_000_000, 0)
	st := staff.New(staff.Config{Store: store, Cost: 4, Throttle: tokenguard.NewThrottle(tokenguard.ThrottleConfig{
		Now: func() time.Time { return now },
	})})
	ctx := t.Context()
	if _, _, err := st.Add(ctx, admin, staff.Person{Name: "Cy", Email: "cy@example.com", Role: oncecall.RoleViewer, Password: strong}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.SignIn(ctx, "192.0.2.3:1", "nobody@example.com", strong); !errors.Is(err, staff.ErrWrongPassword) {
		t.Fatalf("an unknown account: %v", err)
	}
	for i := range 5 {
		if _, wait, err := st.SignIn(ctx, "192.0.2."+string(rune('4'+i))+":1", "cy@example.com", "wrong wrong wrong"); wait != 0 || !errors.Is(err, staff.ErrWrongPassword) {
			t.Fatalf("wrong password %d: %v %v", i+1, wait, err)
		}
	}
	if sg, wait, err := st.SignIn(ctx, "198.51.100.1:1", "cy@example.com", strong); wait <= 0 || err != nil || sg.Secret != "" {
		t.Fatalf("the right password while the account waits: %v %v %q", wait, err, sg.Secret)
	}
	now = now.Add(time.Minute)
	if sg, wait, err := st.SignIn(ctx, "198.51.100.1:1", "cy@example.com", strong); wait != 0 || err != nil || sg.Secret == "" {
		t.Fatalf("a minute later: %v %v", wait, err)
	}
}

// A break-glass session is an admin of every tenant under the name given,
// marked as break-glass; a person's session carries their tenant.
func TestBreakGlassAndTenantSessions(t *testing.T) {
	t.Parallel()
	st, store := setup(t)
	ctx := t.Context()
	tenant, _, err := store.CreateTenant(ctx, "Harbour Dental", "")
	if err != nil {
		t.Fatal(err)
	}
	sg, err := st.BreakGlass(ctx, "Dee")
	if err != nil || sg.Session.Role != oncecall.RoleAdmin || sg.Session.TenantID != uuid.Nil || sg.Session.Actor.Via != oncecall.ViaBreakGlass {
		t.Fatalf("break-glass: %+v %v", sg.Session, err)
	}
	if _, err := st.BreakGlass(ctx, ""); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("break-glass without a name: %v", err)
	}
	if _, _, err := st.Add(ctx, admin, staff.Person{Name: "Eve", Email: "eve@example.com", Role: oncecall.RoleResolver, TenantID: tenant.ID, Password: strong}); err != nil {
		t.Fatal(err)
	}
	sg, _, err = st.SignIn(ctx, "192.0.2.5:1", "eve@example.com", strong)
	if err != nil || sg.Session.TenantID != tenant.ID || sg.Session.Role != oncecall.RoleResolver {
		t.Fatalf("a tenant's person: %+v %v", sg.Session, err)
	}
	if _, _, err := st.Add(ctx, admin, staff.Person{Name: "Eve 2", Email: "EVE@example.com", Role: oncecall.RoleViewer}); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("a second person with the same e-mail address: %v", err)
	}
}
