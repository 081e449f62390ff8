package providersim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// answer is one HTTP exchange with the simulator; Err is set when the
// connection ended without an answer.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error
}

func (a answer) write(t *testing.T) providersim.Write {
	t.Helper()
	var w providersim.Write
	if err := json.Unmarshal(a.Body, &w); err != nil {
		t.Fatalf("decode write from %d %s: %v", a.Status, a.Body, err)
	}
	return w
}

func (a answer) code(t *testing.T) string {
	t.Helper()
	var p struct{ Code string }
	if err := json.Unmarshal(a.Body, &p); err != nil {
		t.Fatalf("decode problem from %d %s: %v", a.Status, a.Body, err)
	}
	return p.Code
}

// client uses a fresh transport so one test's dropped connections never
// meet another's.
func client() *http.Client { return &http.Client{Transport: &http.Transport{}} }

func do(t *testing.T, method, u string, header map[string]string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client().Do(req)
	if err != nil {
		return answer{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b, Err: err}
}

// write posts a write with a key (may be empty) and X-Sim-Fault (may be empty).
func write(t *testing.T, s *simtest.Sim, capability, key, ref string, payload map[string]any, fault string) answer {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	if fault != "" {
		h["X-Sim-Fault"] = fault
	}
	return do(t, http.MethodPost, s.URL+"/"+capability+"/writes", h,
		map[string]any{"external_ref": ref, "operation": "test.write", "payload": payload})
}

func byKey(t *testing.T, s *simtest.Sim, capability, key string) answer {
	t.Helper()
	return do(t, http.MethodGet, s.URL+"/"+capability+"/writes/by-key/"+url.PathEscape(key), nil, nil)
}

func byRef(t *testing.T, s *simtest.Sim, capability, ref string) []providersim.Write {
	t.Helper()
	a := do(t, http.MethodGet, s.URL+"/"+capability+"/writes?external_ref="+url.QueryEscape(ref), nil, nil)
	if a.Status != http.StatusOK {
		t.Fatalf("lookup by ref: %d %s", a.Status, a.Body)
	}
	var l struct{ Writes []providersim.Write }
	if err := json.Unmarshal(a.Body, &l); err != nil {
		t.Fatal(err)
	}
	return l.Writes
}

func wantStatus(t *testing.T, a answer, status int) {
	t.Helper()
	if a.Err != nil || a.Status != status {
		t.Fatalf("got %d %s (err %v), want %d", a.Status, a.Body, a.Err, status)
	}
}

func TestReplayWithSameKeyReturnsTheSameWrite(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	p := map[string]any{"slot_id": "slot-1", "customer_id": "c-1"}
	first := write(t, s, "calendar", "k-1", "act-1:book", p, "")
	wantStatus(t, first, http.StatusCreated)
	again := write(t, s, "calendar", "k-1", "act-1:book", map[string]any{"customer_id": "c-1", "slot_id": "slot-1"}, "")
	wantStatus(t, again, http.StatusOK)
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay without Idempotent-Replayed: true")
	}
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("first answer marked replayed")
	}
	if !bytes.Equal(first.Body, again.Body) {
		t.Errorf("replay differs:\n%s\n%s", first.Body, again.Body)
	}
	w := first.write(t)
	if !strings.HasPrefix(w.ID, "cal_") || w.Status != "committed" || w.ExternalRef != "act-1:book" || w.Key != "k-1" {
		t.Errorf("write = %+v", w)
	}
	l := s.Ledger("calendar")
	if len(l) != 1 || l[0].ID != w.ID || l[0].Requests != 2 {
		t.Fatalf("ledger = %+v, want one write hit by 2 requests", l)
	}
}

func TestSameKeyForAnotherWriteIsRefused(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	wantStatus(t, write(t, s, "crm", "k-1", "act-1:note", map[string]any{"text": "a"}, ""), http.StatusCreated)
	for name, a := range map[string]answer{
		"payload":      write(t, s, "crm", "k-1", "act-1:note", map[string]any{"text": "b"}, ""),
		"external_ref": write(t, s, "crm", "k-1", "act-2:note", map[string]any{"text": "a"}, ""),
	} {
		wantStatus(t, a, http.StatusBadRequest)
		if c := a.code(t); c != "IDEMPOTENCY_KEY_REUSED" {
			t.Errorf("%s: code %s", name, c)
		}
	}
	if l := s.Ledger("crm"); len(l) != 1 || l[0].Requests != 3 {
		t.Fatalf("ledger = %+v, want one write hit by 3 requests", l)
	}
}

func TestProviderWithoutIdempotencyCreatesDuplicates(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg   providersim.Config
		fault string
	}{
		"ignore_keys fault":     {fault: "ignore_keys"},
		"--no-idempotency flag": {cfg: providersim.Config{NoIdempotency: true}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, tc.cfg)
			a := write(t, s, "messaging", "k-1", "act-1:sms", map[string]any{"to": "+15550001"}, tc.fault)
			b := write(t, s, "messaging", "k-1", "act-1:sms", map[string]any{"to": "+15550001"}, tc.fault)
			wantStatus(t, a, http.StatusCreated)
			wantStatus(t, b, http.StatusCreated)
			if b.Header.Get("Idempotent-Replayed") != "" || a.write(t).ID == b.write(t).ID {
				t.Fatalf("second write was deduplicated: %s", b.Body)
			}
			l := s.Ledger("messaging")
			if len(l) != 2 || l[0].Key != "k-1" || l[1].Key != "k-1" || l[0].Requests != 2 {
				t.Fatalf("ledger = %+v, want two writes under k-1", l)
			}
			if got := byRef(t, s, "messaging", "act-1:sms"); len(got) != 2 {
				t.Fatalf("lookup by ref found %d writes, want 2", len(got))
			}
		})
	}
}

func TestProviderWithoutIdempotencyNeedsNoKey(t *testing.T) {
	t.Parallel()
	keyed := simtest.Start(t, providersim.Config{})
	a := write(t, keyed, "payments", "", "act-1:charge", map[string]any{"amount": 100}, "")
	wantStatus(t, a, http.StatusBadRequest)
	if c := a.code(t); c != "IDEMPOTENCY_KEY_MISSING" {
		t.Errorf("code %s", c)
	}
	if l := keyed.Ledger(""); len(l) != 0 {
		t.Fatalf("ledger = %+v after a refused write", l)
	}
	plain := simtest.Start(t, providersim.Config{NoIdempotency: true})
	wantStatus(t, write(t, plain, "payments", "", "act-1:charge", map[string]any{"amount": 100}, ""), http.StatusCreated)
	if l := plain.Ledger("payments"); len(l) != 1 || l[0].Requests != 1 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestDropResponseCommitsAndLookupFindsIt(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	a := write(t, s, "payments", "k-1", "act-1:charge", map[string]any{"amount": 1500}, "drop_response")
	if a.Err == nil {
		t.Fatalf("got an answer %d %s, want the connection closed", a.Status, a.Body)
	}
	found := byKey(t, s, "payments", "k-1")
	wantStatus(t, found, http.StatusOK)
	w := found.write(t)
	if w.Status != "committed" || w.ExternalRef != "act-1:charge" {
		t.Fatalf("lookup = %+v", w)
	}
	if got := byRef(t, s, "payments", "act-1:charge"); len(got) != 1 || got[0].ID != w.ID {
		t.Fatalf("lookup by ref = %+v", got)
	}
	again := write(t, s, "payments", "k-1", "act-1:charge", map[string]any{"amount": 1500}, "")
	wantStatus(t, again, http.StatusOK)
	if again.write(t).ID != w.ID {
		t.Errorf("resend with the key got another write")
	}
	if l := s.Ledger("payments"); len(l) != 1 || l[0].Requests != 2 {
		t.Fatalf("ledger = %+v, want one write", l)
	}
}

func TestFailBeforeCommitWritesNothing(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	a := write(t, s, "calendar", "k-1", "act-1:book", map[string]any{"slot_id": "s-1"}, "fail_before_commit")
	wantStatus(t, a, http.StatusServiceUnavailable)
	wantStatus(t, byKey(t, s, "calendar", "k-1"), http.StatusNotFound)
	if got := byRef(t, s, "calendar", "act-1:book"); len(got) != 0 {
		t.Fatalf("lookup by ref = %+v", got)
	}
	if l := s.Ledger(""); len(l) != 0 {
		t.Fatalf("ledger = %+v", l)
	}
	// The key is free: the retry performs the write.
	wantStatus(t, write(t, s, "calendar", "k-1", "act-1:book", map[string]any{"slot_id": "s-1"}, ""), http.StatusCreated)
	if l := s.Ledger(""); len(l) != 1 || l[0].Requests != 2 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestFailAfterCommitWrites(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	a := write(t, s, "crm", "k-1", "act-1:points", map[string]any{"points": 10}, "fail_after_commit")
	wantStatus(t, a, http.StatusInternalServerError)
	found := byKey(t, s, "crm", "k-1")
	wantStatus(t, found, http.StatusOK)
	again := write(t, s, "crm", "k-1", "act-1:points", map[string]any{"points": 10}, "")
	wantStatus(t, again, http.StatusOK)
	if again.write(t).ID != found.write(t).ID {
		t.Fatalf("resend found another write")
	}
	if l := s.Ledger("crm"); len(l) != 1 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestDownClosesTheConnectionAndWritesNothing(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	a := write(t, s, "calendar", "k-1", "act-1:book", map[string]any{"slot_id": "s-1"}, "down")
	if a.Err == nil {
		t.Fatalf("got an answer %d %s, want the connection closed", a.Status, a.Body)
	}
	wantStatus(t, byKey(t, s, "calendar", "k-1"), http.StatusNotFound)
	if l := s.Ledger(""); len(l) != 0 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestLookupLagHidesAFreshWrite(t *testing.T) {
	t.Parallel()
	const lag = 1500 * time.Millisecond
	s := simtest.Start(t, providersim.Config{LookupLag: lag})
	start := time.Now()
	wantStatus(t, write(t, s, "messaging", "k-1", "act-1:sms", map[string]any{"to": "+15550001"}, ""), http.StatusCreated)
	if since := time.Since(start); since >= lag {
		t.Skipf("the write took %v, longer than the lag; nothing to observe", since)
	}
	hidden := byKey(t, s, "messaging", "k-1")
	refs := byRef(t, s, "messaging", "act-1:sms")
	if since := time.Since(start); since >= lag {
		t.Skipf("the lookups ended %v after the write, past the lag; nothing to observe", since)
	}
	wantStatus(t, hidden, http.StatusNotFound)
	if hidden.code(t) != "NOT_FOUND" || len(refs) != 0 {
		t.Fatalf("fresh write visible: %s %+v", hidden.Body, refs)
	}
	// The audit ledger does not lag.
	if l := s.Ledger("messaging"); len(l) != 1 {
		t.Fatalf("ledger = %+v", l)
	}
	deadline := time.Now().Add(10 * time.Second)
	for byKey(t, s, "messaging", "k-1").Status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the write never became visible")
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if seen := time.Since(start); seen < lag {
		t.Fatalf("visible after %v, before the lag of %v", seen, lag)
	}
	if got := byRef(t, s, "messaging", "act-1:sms"); len(got) != 1 {
		t.Fatalf("lookup by ref = %+v", got)
	}
}

func TestLookupLagFaultOnOneWrite(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	wantStatus(t, write(t, s, "crm", "k-1", "act-1:create", nil, "lookup_lag=1h"), http.StatusCreated)
	wantStatus(t, write(t, s, "crm", "k-2", "act-2:create", nil, ""), http.StatusCreated)
	wantStatus(t, byKey(t, s, "crm", "k-2"), http.StatusOK)
	wantStatus(t, byKey(t, s, "crm", "k-1"), http.StatusNotFound)
}

// clock is a settable clock for key retention.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestKeyRetentionEnds(t *testing.T) {
	t.Parallel()
	c := &clock{now: time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)}
	s := simtest.Start(t, providersim.Config{KeyRetention: time.Hour, Now: c.Now})
	p := map[string]any{"amount": 100}
	first := write(t, s, "payments", "k-1", "act-1:charge", p, "").write(t)
	c.Add(59 * time.Minute)
	wantStatus(t, write(t, s, "payments", "k-1", "act-1:charge", p, ""), http.StatusOK)
	wantStatus(t, byKey(t, s, "payments", "k-1"), http.StatusOK)
	c.Add(time.Minute)
	// The key is forgotten: lookups by it find nothing, a resend is a new write.
	wantStatus(t, byKey(t, s, "payments", "k-1"), http.StatusNotFound)
	second := write(t, s, "payments", "k-1", "act-1:charge", p, "")
	wantStatus(t, second, http.StatusCreated)
	if second.write(t).ID == first.ID {
		t.Fatalf("expired key replayed the old write")
	}
	if got := byRef(t, s, "payments", "act-1:charge"); len(got) != 2 {
		t.Fatalf("lookup by ref found %d writes, want both", len(got))
	}
	if l := s.Ledger("payments"); len(l) != 2 {
		t.Fatalf("ledger = %+v, want 2 writes", l)
	}
}

func TestBusinessRejectionsAreStoredAndReplayed(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	wantStatus(t, write(t, s, "calendar", "k-1", "act-1:book", map[string]any{"slot_id": "s-1"}, ""), http.StatusCreated)
	for _, tc := range []struct {
		capability, key, ref string
		payload              map[string]any
		fault, code          string
	}{
		{"calendar", "k-2", "act-2:book", map[string]any{"slot_id": "s-1"}, "", "SLOT_UNAVAILABLE"},
		{"payments", "k-3", "act-3:charge", map[string]any{"amount": 5, "payment_method": "pm_card_declined"}, "", "PAYMENT_DECLINED"},
		{"messaging", "k-4", "act-4:sms", map[string]any{"to": "+1"}, "reject=RECIPIENT_INVALID", "RECIPIENT_INVALID"},
	} {
		first := write(t, s, tc.capability, tc.key, tc.ref, tc.payload, tc.fault)
		wantStatus(t, first, http.StatusUnprocessableEntity)
		if c := first.code(t); c != tc.code {
			t.Errorf("%s: code %s, want %s", tc.ref, c, tc.code)
		}
		again := write(t, s, tc.capability, tc.key, tc.ref, tc.payload, "")
		wantStatus(t, again, http.StatusUnprocessableEntity)
		if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, again.Body) {
			t.Errorf("%s: rejection not replayed: %s", tc.ref, again.Body)
		}
		found := byKey(t, s, tc.capability, tc.key)
		wantStatus(t, found, http.StatusOK)
		if w := found.write(t); w.Status != "rejected" || w.Code != tc.code {
			t.Errorf("%s: lookup = %+v", tc.ref, w)
		}
	}
	if l := s.Ledger(""); len(l) != 1 {
		t.Fatalf("ledger = %+v, want only the committed booking", l)
	}
}

func TestSameKeyInFlightConflicts(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	first := make(chan answer, 1)
	go func() {
		first <- write(t, s, "calendar", "k-1", "act-1:book", map[string]any{"slot_id": "s-1"}, "delay=3s")
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var h struct {
			InFlight int `json:"in_flight"`
		}
		if err := json.Unmarshal(do(t, http.MethodGet, s.URL+"/healthz", nil, nil).Body, &h); err != nil {
			t.Fatal(err)
		}
		if h.InFlight == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first write never got in flight")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	second := write(t, s, "calendar", "k-1", "act-1:book", map[string]any{"slot_id": "s-1"}, "")
	wantStatus(t, second, http.StatusConflict)
	if c := second.code(t); c != "IDEMPOTENCY_IN_PROGRESS" {
		t.Errorf("code %s", c)
	}
	wantStatus(t, <-first, http.StatusCreated)
	if l := s.Ledger(""); len(l) != 1 || l[0].Requests != 2 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestControlFaults(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	ctx := context.Background()
	s.Fault("calendar", "fail_after_commit", 1)
	never := 0.0
	if _, err := s.Admin.AddFault(ctx, providersim.Rule{Capability: "*", Fault: "fail_before_commit", Probability: &never}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.AddFault(ctx, providersim.Rule{Capability: "crm", Fault: "fail_before_commit", Count: 1, On: "lookup"}); err != nil {
		t.Fatal(err)
	}
	// Another capability is untouched; the calendar rule applies once.
	wantStatus(t, write(t, s, "payments", "k-1", "a:1", nil, ""), http.StatusCreated)
	wantStatus(t, write(t, s, "calendar", "k-2", "a:2", nil, ""), http.StatusInternalServerError)
	wantStatus(t, write(t, s, "calendar", "k-3", "a:3", nil, ""), http.StatusCreated)
	// The lookup rule leaves writes alone and fails one lookup.
	wantStatus(t, write(t, s, "crm", "k-4", "a:4", nil, ""), http.StatusCreated)
	wantStatus(t, byKey(t, s, "crm", "k-4"), http.StatusServiceUnavailable)
	wantStatus(t, byKey(t, s, "crm", "k-4"), http.StatusOK)

	rules, err := s.Admin.Faults(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 1 || rules[0].Fault != "fail_before_commit" || rules[0].Applied != 0 {
		t.Fatalf("rules left = %+v, want only the probability-0 rule, never applied", rules)
	}
	if err := s.Admin.ClearFaults(ctx); err != nil {
		t.Fatal(err)
	}
	if rules, _ := s.Admin.Faults(ctx); len(rules) != 0 {
		t.Fatalf("rules after clear = %+v", rules)
	}
	for _, bad := range []providersim.Rule{
		{Capability: "fax", Fault: "down"},
		{Capability: "*", Fault: "explode"},
		{Capability: "*", Fault: "delay"},
		{Capability: "*", Fault: "ignore_keys", On: "lookup"},
		{Capability: "*", Fault: "down", Count: -1},
	} {
		if _, err := s.Admin.AddFault(ctx, bad); err == nil || !strings.Contains(err.Error(), "400") {
			t.Errorf("rule %+v: err %v, want a 400", bad, err)
		}
	}
	if l := s.Ledger(""); len(l) != 4 {
		t.Fatalf("ledger = %d writes, want 4", len(l))
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{AuthToken: "secret"})
	auth := map[string]string{"Authorization": "Bearer secret", "Idempotency-Key": "k-1"}
	post := func(path string, h map[string]string, body any) answer {
		return do(t, http.MethodPost, s.URL+path, h, body)
	}
	ok := map[string]any{"external_ref": "a:1", "operation": "x.y", "payload": map[string]any{}}
	for name, tc := range map[string]struct {
		a      answer
		status int
		code   string
	}{
		"no token":           {post("/calendar/writes", map[string]string{"Idempotency-Key": "k-1"}, ok), 401, "UNAUTHORIZED"},
		"unknown capability": {post("/fax/writes", auth, ok), 404, "UNKNOWN_CAPABILITY"},
		"unknown fault":      {post("/calendar/writes", merge(auth, "X-Sim-Fault", "explode"), ok), 400, "INVALID_FAULT"},
		"no external_ref":    {post("/calendar/writes", auth, map[string]any{"operation": "x.y"}), 400, "INVALID_REQUEST"},
		"unknown field":      {post("/calendar/writes", auth, merge(ok, "extra", any(1))), 400, "INVALID_REQUEST"},
		"payload array":      {post("/calendar/writes", auth, merge(ok, "payload", any([]int{1}))), 400, "INVALID_REQUEST"},
		"key not ascii":      {post("/calendar/writes", merge(auth, "Idempotency-Key", "kä"), ok), 400, "IDEMPOTENCY_KEY_INVALID"},
		"no route":           {do(t, http.MethodGet, s.URL+"/nowhere", auth, nil), 404, "NO_ROUTE"},
	} {
		if tc.a.Status != tc.status || tc.a.code(t) != tc.code {
			t.Errorf("%s: %d %s, want %d %s", name, tc.a.Status, tc.a.Body, tc.status, tc.code)
		}
	}
	wantStatus(t, do(t, http.MethodGet, s.URL+"/healthz", nil, nil), http.StatusOK)
	wantStatus(t, post("/calendar/writes", auth, ok), http.StatusCreated)
	if _, err := s.Admin.Ledger(context.Background(), ""); err != nil {
		t.Fatalf("admin with the token: %v", err)
	}
}

func merge[V any](m map[string]V, k string, v V) map[string]V {
	out := map[string]V{k: v}
	for kk, vv := range m {
		if kk != k {
			out[kk] = vv
		}
	}
	return out
}

func TestKeysWithReservedCharactersLookUp(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, providersim.Config{})
	for _, key := range []string{"a/b", "50%off", "q?x=1#f", "sp ace", "..", "derived:ab12"} {
		wantStatus(t, write(t, s, "crm", key, "ref:"+key, nil, ""), http.StatusCreated)
		found := byKey(t, s, "crm", key)
		wantStatus(t, found, http.StatusOK)
		if w := found.write(t); w.Key != key {
			t.Errorf("lookup of %q found key %q", key, w.Key)
		}
	}
}

func TestLedgerFileRecovery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.jsonl")
	s := simtest.Start(t, providersim.Config{Ledger: path})
	wantStatus(t, write(t, s, "calendar", "k-1", "a:1", map[string]any{"slot_id": "s-1"}, ""), http.StatusCreated)
	wantStatus(t, write(t, s, "calendar", "k-1", "a:1", map[string]any{"slot_id": "s-1"}, ""), http.StatusOK)

	// A second simulator on the same ledger is refused.
	if m, err := providersim.Start(context.Background(), providersim.Config{Addr: "127.0.0.1:0", Ledger: path}); err == nil {
		m.Close()
		t.Fatal("a second simulator opened a ledger in use")
	}
	s.Stop()

	// A crash in the middle of an append leaves a torn last line: cut off.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"event":"write","write":{"id":"cal_torn","capab`)
	f.Close()
	s.Restart()
	l := s.Ledger("")
	if len(l) != 1 || l[0].Requests != 2 {
		t.Fatalf("ledger after restart = %+v", l)
	}
	// Memory came back too: the slot is taken, the key replays.
	wantStatus(t, write(t, s, "calendar", "k-2", "a:2", map[string]any{"slot_id": "s-1"}, ""), http.StatusUnprocessableEntity)
	wantStatus(t, write(t, s, "calendar", "k-1", "a:1", map[string]any{"slot_id": "s-1"}, ""), http.StatusOK)
	s.Stop()

	// Damage before the end is refused, not skipped.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("garbage\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := providersim.Start(context.Background(), providersim.Config{Addr: "127.0.0.1:0", Ledger: path}); err == nil {
		m.Close()
		t.Fatal("a damaged ledger was accepted")
	} else if !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v", err)
	}
}
