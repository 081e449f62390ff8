package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// addPoints sends customer.points.add.
func (e recordsEnv) addPoints(customer uuid.UUID, key string, delta int) apptest.Response {
	return e.Post(fmt.Sprintf("/v1/customers/%s/points", customer), e.key, key,
		map[string]any{"delta": delta, "reason": "visit"})
}

func (e recordsEnv) points(customer uuid.UUID) int {
	e.t.Helper()
	return e.Count("SELECT points FROM customers WHERE id = $1", customer)
}

// concurrently runs f(i) for i in [0, n) at once and returns the answers.
func concurrently(n int, f func(i int) apptest.Response) []apptest.Response {
	answers := make([]apptest.Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return answers
}

func TestConcurrentSameKeyIncrementAddsOnce(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("", "")
	answers := concurrently(30, func(int) apptest.Response { return e.addPoints(c, "same-visit", 7) })
	firsts, replays := 0, 0
	var first []byte
	for _, a := range answers {
		switch {
		case a.Status == http.StatusCreated && !a.Replayed():
			firsts++
			first = a.Body
		case a.Status == http.StatusCreated:
			replays++
		case a.Status == http.StatusConflict: // still running: the caller retries
		default:
			t.Errorf("unexpected answer %d %s", a.Status, a.Body)
		}
	}
	if firsts != 1 {
		t.Fatalf("first executions = %d, want 1", firsts)
	}
	for _, a := range answers {
		if a.Replayed() && !bytes.Equal(a.Body, first) {
			t.Errorf("replay differs:\n%s\n%s", a.Body, first)
		}
	}
	if got := e.points(c); got != 7 {
		t.Fatalf("balance = %d, want 7", got)
	}
	if got := e.Count("SELECT count(*) FROM points_ledger WHERE customer_id = $1", c); got != 1 {
		t.Fatalf("ledger entries = %d, want 1", got)
	}
	t.Logf("30 concurrent, one key: 1 first, %d replays, %d conflicts", replays, 30-1-replays)
}

func TestConcurrentDistinctKeysIncrementEachTime(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("", "")
	answers := concurrently(30, func(i int) apptest.Response { return e.addPoints(c, fmt.Sprintf("visit-%d", i), 3) })
	balances := map[float64]bool{}
	for _, a := range answers {
		if a.Status != http.StatusCreated || a.Replayed() {
			t.Fatalf("answer %d replayed=%v %s", a.Status, a.Replayed(), a.Body)
		}
		balances[resultOf(t, a)["balance"].(float64)] = true
	}
	if got := e.points(c); got != 90 {
		t.Fatalf("balance = %d, want 90", got)
	}
	if got := e.Count("SELECT count(*) FROM points_ledger WHERE customer_id = $1", c); got != 30 {
		t.Fatalf("ledger entries = %d, want 30", got)
	}
	// Each increment saw the one before it: the balances are 3, 6, ..., 90.
	for b := 3; b <= 90; b += 3 {
		if !balances[float64(b)] {
			t.Fatalf("no answer reported balance %d: %v", b, balances)
		}
	}
}

func TestPointsNeverGoBelowZero(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("", "")
	if r := e.addPoints(c, "earn", 10); r.Status != http.StatusCreated || resultOf(t, r)["balance"] != 10.0 {
		t.Fatalf("earn: %d %s", r.Status, r.Body)
	}
	over := e.addPoints(c, "redeem-too-much", -11)
	wantRejection(t, over, "INSUFFICIENT_POINTS")
	if d := detailsOf(t, over); d["balance"] != 10.0 || d["delta"] != -11.0 {
		t.Fatalf("details: %v", d)
	}
	if r := e.addPoints(c, "redeem", -10); r.Status != http.StatusCreated || resultOf(t, r)["balance"] != 0.0 {
		t.Fatalf("redeem all: %d %s", r.Status, r.Body)
	}
	if got := e.Get("/v1/customers/"+c.String(), e.key).JSON(t)["points"]; got != 0.0 {
		t.Fatalf("GET customer points = %v", got)
	}
	if got := e.Count("SELECT count(*) FROM points_ledger WHERE customer_id = $1", c); got != 2 {
		t.Fatalf("ledger entries = %d, want 2 (the refused redemption is not one)", got)
	}
	wantRejection(t, e.addPoints(uuid.New(), "nobody", 5), "CUSTOMER_NOT_FOUND")
}

func TestCreateCustomerRefusesADuplicate(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	first := e.Post("/v1/customers", e.key, "c1", map[string]any{"name": "Ana", "phone": "+44 20 7946 0958", "email": "ANA@example.com", "external_ref": "crm-1"})
	if first.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	created := resultOf(t, first)
	if created["phone"] != "+442079460958" || created["email"] != "ana@example.com" || created["points"] != 0.0 {
		t.Fatalf("created: %v", created)
	}
	id := created["id"].(string)
	for key, body := range map[string]map[string]any{
		"c2": {"name": "Ana again", "phone": "0044 20 7946 0958"},
		"c3": {"name": "Someone", "external_ref": "crm-1"},
	} {
		r := e.Post("/v1/customers", e.key, key, body)
		wantRejection(t, r, "CUSTOMER_EXISTS")
		if detailsOf(t, r)["customer_id"] != id {
			t.Fatalf("%s: details %s, want customer %s", key, r.Body, id)
		}
	}
	if got := e.Count("SELECT count(*) FROM customers WHERE tenant_id = $1", e.tenant); got != 1 {
		t.Fatalf("customers = %d, want 1", got)
	}
	// Another tenant may have a customer with the same phone.
	_, otherKey := e.Tenant("other")
	if r := e.Post("/v1/customers", otherKey, "c1", map[string]any{"name": "Ana", "phone": "+442079460958"}); r.Status != http.StatusCreated || r.Replayed() {
		t.Fatalf("other tenant: %d %s", r.Status, r.Body)
	}
	if r := e.Get("/v1/customers/"+id, otherKey); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant reads the customer: %d", r.Status)
	}
	got := e.Get("/v1/customers/"+id, e.key)
	if got.Status != http.StatusOK || got.JSON(t)["external_ref"] != "crm-1" {
		t.Fatalf("GET customer: %d %s", got.Status, got.Body)
	}
}

func TestConcurrentCreatesOfOnePhoneMakeOneCustomer(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	answers := concurrently(10, func(i int) apptest.Response {
		return e.Post("/v1/customers", e.key, fmt.Sprintf("create-%d", i), map[string]any{"name": fmt.Sprintf("Caller %d", i), "phone": "+14155550100"})
	})
	created, exists := 0, 0
	for _, a := range answers {
		switch {
		case a.Status == http.StatusCreated:
			created++
		case a.Status == http.StatusUnprocessableEntity && a.JSON(t)["code"] == "CUSTOMER_EXISTS":
			exists++
		default:
			t.Errorf("unexpected %d %s", a.Status, a.Body)
		}
	}
	if created != 1 || exists != 9 {
		t.Fatalf("created %d, exists %d", created, exists)
	}
	if got := e.Count("SELECT count(*) FROM customers WHERE phone = '+14155550100'"); got != 1 {
		t.Fatalf("customers with the phone = %d", got)
	}
}

func TestUpdateCustomer(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("+442079460111", "c@example.com")
	other := e.customer("+442079460222", "")
	path := "/v1/customers/" + c.String()
	patch := func(key string, body any) apptest.Response { return e.send(http.MethodPatch, path, key, body) }

	// null removes a field; absent fields are left alone.
	r := patch("u1", `{"email": null, "name": " Cleo  Martin "}`)
	if r.Status != http.StatusOK {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	res := resultOf(t, r)
	if _, has := res["email"]; has || res["name"] != "Cleo  Martin" || res["phone"] != "+442079460111" {
		t.Fatalf("after update: %v", res)
	}
	if got := e.Count("SELECT count(*) FROM customers WHERE id = $1 AND email IS NULL", c); got != 1 {
		t.Fatalf("email not removed")
	}
	// Another customer's phone is refused, naming that customer.
	taken := patch("u2", map[string]any{"phone": "+44 20 7946 0222"})
	wantRejection(t, taken, "CUSTOMER_EXISTS")
	if detailsOf(t, taken)["customer_id"] != other.String() {
		t.Fatalf("details: %s", taken.Body)
	}
	// Its own phone is no conflict.
	if r := patch("u3", map[string]any{"phone": "+442079460111"}); r.Status != http.StatusOK {
		t.Fatalf("own phone: %d %s", r.Status, r.Body)
	}
	// The same change under a new key is a new action; a replay is not.
	if a, b := patch("u4", map[string]any{"name": "Cleo"}), patch("u5", map[string]any{"name": "Cleo"}); a.JSON(t)["action_id"] == b.JSON(t)["action_id"] || b.Replayed() {
		t.Fatalf("two intended updates collapsed into one")
	}
	wantRejection(t, e.send(http.MethodPatch, "/v1/customers/"+uuid.NewString(), "u6", map[string]any{"name": "X"}), "CUSTOMER_NOT_FOUND")
	// merge-patch is JSON too.
	mp := e.Request(http.MethodPatch, path, e.key, `{"external_ref":"crm-9"}`, "Idempotency-Key", "u7", "Content-Type", "application/merge-patch+json")
	if mp.Status != http.StatusOK || resultOf(t, mp)["external_ref"] != "crm-9" {
		t.Fatalf("merge-patch: %d %s", mp.Status, mp.Body)
	}
}

func TestNotesAppendOncePerAction(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("", "")
	path := "/v1/customers/" + c.String() + "/notes"
	note := map[string]any{"text": "Asked about parking."}
	a := e.Post(path, e.key, "n1", note)
	b := e.Post(path, e.key, "n2", note) // the same text, a second intended note
	if a.Status != http.StatusCreated || b.Status != http.StatusCreated || b.Replayed() {
		t.Fatalf("notes: %d, %d %s", a.Status, b.Status, b.Body)
	}
	if r := e.Post(path, e.key, "n1", note); !r.Replayed() || !bytes.Equal(r.Body, a.Body) {
		t.Fatalf("note replay: %s", r.Body)
	}
	if got := e.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1", c); got != 2 {
		t.Fatalf("notes = %d, want 2", got)
	}
	_, otherKey := e.Tenant("other")
	wantRejection(t, e.Post(path, otherKey, "n3", note), "CUSTOMER_NOT_FOUND")
	if got := e.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1", c); got != 2 {
		t.Fatalf("another tenant added a note")
	}
}
