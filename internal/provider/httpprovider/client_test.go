package httpprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider/httpprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// setup starts a simulator and a client with its own connection pool.
func setup(t *testing.T, cfg providersim.Config) (*simtest.Sim, *httpprovider.Client) {
	t.Helper()
	s := simtest.Start(t, cfg)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return s, &httpprovider.Client{BaseURL: s.URL, Token: cfg.AuthToken, HTTP: &http.Client{Transport: tr}, Timeout: 5 * time.Second}
}

var ctx = context.Background()

func book(slot string) map[string]any { return map[string]any{"slot_id": slot, "customer_id": "c-1"} }

// ledgerFor returns the committed writes with an external reference.
func ledgerFor(t *testing.T, s *simtest.Sim, ref string) []providersim.LedgerEntry {
	t.Helper()
	var out []providersim.LedgerEntry
	for _, e := range s.Ledger("") {
		if e.ExternalRef == ref {
			out = append(out, e)
		}
	}
	return out
}

func wantClass(t *testing.T, err error, want httpprovider.Class) {
	t.Helper()
	if got := httpprovider.ClassOf(err); got != want {
		t.Fatalf("error %v (%T) is %s, want %s", err, err, got, want)
	}
}

func TestWriteAndReplay(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{AuthToken: "tok"})
	rec, err := c.Write(ctx, "calendar", "k-1", "act-1:book", "appointment.book", book("s-1"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID == "" || rec.Status != httpprovider.StatusCommitted || rec.Replayed || rec.Key != "k-1" || rec.ExternalRef != "act-1:book" {
		t.Fatalf("record = %+v", rec)
	}
	again, err := c.Write(ctx, "calendar", "k-1", "act-1:book", "appointment.book", book("s-1"))
	if err != nil || again.ID != rec.ID || !again.Replayed {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	byKey, found, err := c.LookupByKey(ctx, "calendar", "k-1")
	if err != nil || !found || byKey.ID != rec.ID {
		t.Fatalf("lookup by key = %+v %v %v", byKey, found, err)
	}
	byRef, err := c.LookupByRef(ctx, "calendar", "act-1:book")
	if err != nil || len(byRef) != 1 || byRef[0].ID != rec.ID {
		t.Fatalf("lookup by ref = %+v %v", byRef, err)
	}
	if l := ledgerFor(t, s, "act-1:book"); len(l) != 1 || l[0].Requests != 2 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestBusinessRejectionIsRejected(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{})
	for range 2 { // the first answer and its replay
		_, err := c.Write(ctx, "payments", "k-1", "act-1:charge", "payment.charge",
			map[string]any{"amount": 1500, "currency": "EUR", "payment_method": "pm_card_declined"})
		wantClass(t, err, httpprovider.ClassRejected)
		rej, _ := errors.AsType[*httpprovider.Rejected](err)
		if rej.Code != "PAYMENT_DECLINED" || rej.Status != http.StatusUnprocessableEntity || rej.ID == "" {
			t.Fatalf("rejection = %+v", rej)
		}
	}
	rec, found, err := c.LookupByKey(ctx, "payments", "k-1")
	if err != nil || !found || rec.Status != httpprovider.StatusRejected || rec.Code != "PAYMENT_DECLINED" {
		t.Fatalf("lookup = %+v %v %v", rec, found, err)
	}
	if l := s.Ledger(""); len(l) != 0 {
		t.Fatalf("ledger = %+v, want no committed write", l)
	}
}

func TestConnectionRefusedIsNotSent(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{})
	s.Stop()
	_, err := c.Write(ctx, "calendar", "k-1", "act-1:book", "appointment.book", book("s-1"))
	wantClass(t, err, httpprovider.ClassNotSent)
	_, _, err = c.LookupByKey(ctx, "calendar", "k-1")
	wantClass(t, err, httpprovider.ClassNotSent)

	// The provider comes back: the same write, resent, is performed once.
	s.Restart()
	rec, err := c.Write(ctx, "calendar", "k-1", "act-1:book", "appointment.book", book("s-1"))
	if err != nil || rec.Replayed {
		t.Fatalf("write after restart = %+v, %v", rec, err)
	}
	if l := ledgerFor(t, s, "act-1:book"); len(l) != 1 || l[0].Requests != 1 {
		t.Fatalf("ledger = %+v: the refused attempt reached the provider", l)
	}
}

func TestUnreachableAddressIsNotSent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &httpprovider.Client{BaseURL: "http://" + addr, Timeout: 2 * time.Second}
	_, err = c.Write(ctx, "crm", "k-1", "a:1", "customer.create", nil)
	wantClass(t, err, httpprovider.ClassNotSent)
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("NotSent does not wrap the dial error: %v", err)
	}
}

// Each fault the simulator injects after the request was sent is ambiguous
// to the client; the table says what the provider holds afterwards.
func TestFaultsAfterSendingAreAmbiguous(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault   string
		written bool
		status  int
	}{
		{"drop_response", true, 0},
		{"fail_after_commit", true, http.StatusInternalServerError},
		{"fail_before_commit", false, http.StatusServiceUnavailable},
		{"down", false, 0},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			s, c := setup(t, providersim.Config{})
			s.Fault("messaging", tc.fault, 1)
			_, err := c.Write(ctx, "messaging", "k-1", "act-1:sms", "message.send", map[string]any{"to": "+15550001"})
			wantClass(t, err, httpprovider.ClassAmbiguous)
			if amb, _ := errors.AsType[*httpprovider.Ambiguous](err); amb.Status != tc.status {
				t.Errorf("status = %d, want %d", amb.Status, tc.status)
			}
			rec, found, err := c.LookupByKey(ctx, "messaging", "k-1")
			if err != nil || found != tc.written {
				t.Fatalf("lookup = %+v found=%v err=%v, want found=%v", rec, found, err, tc.written)
			}
			if l := ledgerFor(t, s, "act-1:sms"); len(l) != map[bool]int{true: 1}[tc.written] {
				t.Fatalf("ledger = %+v", l)
			}
			// A resend with the same key settles it, and never duplicates.
			again, err := c.Write(ctx, "messaging", "k-1", "act-1:sms", "message.send", map[string]any{"to": "+15550001"})
			if err != nil || again.Replayed != tc.written {
				t.Fatalf("resend = %+v, %v", again, err)
			}
			if l := ledgerFor(t, s, "act-1:sms"); len(l) != 1 {
				t.Fatalf("ledger after resend = %+v", l)
			}
		})
	}
}

// net/http resends a request that carries an Idempotency-Key when a reused
// keep-alive connection fails; the client must not let it, or a lost answer
// becomes a silent second write at a provider that ignores keys.
func TestLostAnswerOnReusedConnectionIsNotResent(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{NoIdempotency: true})
	if _, err := c.Write(ctx, "crm", "k-warm", "warm", "customer.create", nil); err != nil {
		t.Fatal(err)
	}
	s.Fault("crm", "drop_response", 1)
	_, err := c.Write(ctx, "crm", "k-1", "act-1:create", "customer.create", nil)
	wantClass(t, err, httpprovider.ClassAmbiguous)
	if l := ledgerFor(t, s, "act-1:create"); len(l) != 1 {
		t.Fatalf("ledger holds %d writes for one Write call", len(l))
	}
}

func TestTimeoutAfterSendingIsAmbiguousAndTheWriteLands(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{})
	c.Timeout = 300 * time.Millisecond
	s.Fault("payments", "delay=1s", 1)
	_, err := c.Write(ctx, "payments", "k-1", "act-1:charge", "payment.charge", map[string]any{"amount": 100})
	wantClass(t, err, httpprovider.ClassAmbiguous)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a deadline", err)
	}
	// The provider commits after the caller gave up.
	c.Timeout = 5 * time.Second
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, found, err := c.LookupByKey(ctx, "payments", "k-1")
		if err != nil {
			t.Fatal(err)
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delayed write never landed")
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

func TestProviderAnswersThatAreNotOutcomes(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{AuthToken: "tok"})
	if _, err := c.Write(ctx, "crm", "k-1", "a:1", "customer.create", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		call  func() error
		class httpprovider.Class
		code  string
	}{
		"wrong token": {func() error {
			bad := *c
			bad.Token = "nope"
			_, err := bad.Write(ctx, "crm", "k-2", "a:2", "customer.create", nil)
			return err
		}, httpprovider.ClassNotSent, "UNAUTHORIZED"},
		"unknown capability": {func() error {
			_, err := c.Write(ctx, "fax", "k-2", "a:2", "fax.send", nil)
			return err
		}, httpprovider.ClassNotSent, "UNKNOWN_CAPABILITY"},
		"malformed write": {func() error {
			_, err := c.Write(ctx, "crm", "k-2", "", "customer.create", nil)
			return err
		}, httpprovider.ClassRejected, "INVALID_REQUEST"},
		"key reused for another write": {func() error {
			_, err := c.Write(ctx, "crm", "k-1", "a:1", "customer.create", map[string]any{"n": 2})
			return err
		}, httpprovider.ClassAmbiguous, "IDEMPOTENCY_KEY_REUSED"},
		// A 404 that is not the protocol's NOT_FOUND is no evidence.
		"lookup at a wrong base URL": {func() error {
			bad := *c
			bad.BaseURL = s.URL + "/v2"
			_, found, err := bad.LookupByKey(ctx, "crm", "k-1")
			if found {
				t.Errorf("found through a wrong URL")
			}
			return err
		}, httpprovider.ClassNotSent, "NO_ROUTE"},
	} {
		err := tc.call()
		if got := httpprovider.ClassOf(err); got != tc.class {
			t.Errorf("%s: %v is %s, want %s", name, err, got, tc.class)
			continue
		}
		code := ""
		switch e := err.(type) {
		case *httpprovider.Rejected:
			code = e.Code
		case *httpprovider.NotSent:
			code = e.Code
		case *httpprovider.Ambiguous:
			code = e.Code
		}
		if code != tc.code {
			t.Errorf("%s: code %q, want %q", name, code, tc.code)
		}
	}
	if l := s.Ledger(""); len(l) != 1 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestInFlightKeyIsAmbiguous(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{})
	s.Fault("calendar", "delay=3s", 1)
	first := make(chan error, 1)
	go func() {
		_, err := c.Write(ctx, "calendar", "k-1", "act-1:book", "appointment.book", book("s-1"))
		first <- err
	}()
	waitInFlight(t, s)
	_, err := c.Write(ctx, "calendar", "k-1", "act-1:book", "appointment.book", book("s-1"))
	amb, ok := errors.AsType[*httpprovider.Ambiguous](err)
	if !ok || amb.Status != http.StatusConflict || amb.Code != "IDEMPOTENCY_IN_PROGRESS" {
		t.Fatalf("second write while the first runs: %v, want an ambiguous 409 IDEMPOTENCY_IN_PROGRESS", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if l := ledgerFor(t, s, "act-1:book"); len(l) != 1 {
		t.Fatalf("ledger = %+v", l)
	}
}

func TestLookups(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{})
	_, found, err := c.LookupByKey(ctx, "crm", "nothing")
	if err != nil || found {
		t.Fatalf("lookup of an unknown key: found=%v err=%v", found, err)
	}
	// Keys that look like paths survive the trip.
	for _, key := range []string{".", "..", "a/../b", "x%2Fy", "k?#"} {
		rec, err := c.Write(ctx, "crm", key, "ref-"+key, "customer.create", nil)
		if err != nil {
			t.Fatalf("write %q: %v", key, err)
		}
		got, found, err := c.LookupByKey(ctx, "crm", key)
		if err != nil || !found || got.ID != rec.ID {
			t.Fatalf("lookup %q = %+v %v %v", key, got, found, err)
		}
	}
	// A provider without key support: the lookup by reference shows both writes.
	if _, err := c.Write(ctx, "messaging", "k-1", "act-1:sms", "message.send", nil); err != nil {
		t.Fatal(err)
	}
	s.Fault("messaging", "ignore_keys", 1)
	if _, err := c.Write(ctx, "messaging", "k-1", "act-1:sms", "message.send", nil); err != nil {
		t.Fatal(err)
	}
	recs, err := c.LookupByRef(ctx, "messaging", "act-1:sms")
	if err != nil || len(recs) != 2 || recs[0].ID == recs[1].ID {
		t.Fatalf("lookup by ref = %+v %v, want two distinct writes", recs, err)
	}
	// Failing and lagging lookups are inconclusive, never "not found".
	if _, err := s.Admin.AddFault(ctx, providersim.Rule{Capability: "messaging", Fault: "fail_after_commit", Count: 1, On: "lookup"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.LookupByKey(ctx, "messaging", "k-1")
	wantClass(t, err, httpprovider.ClassAmbiguous)
	if _, err := s.Admin.AddFault(ctx, providersim.Rule{Capability: "messaging", Fault: "drop_response", Count: 1, On: "lookup"}); err != nil {
		t.Fatal(err)
	}
	// On a fresh connection: net/http repeats a GET once by itself when a
	// reused connection closes without an answer (harmless for a lookup).
	fresh := *c
	fresh.HTTP = &http.Client{Transport: &http.Transport{}}
	_, err = fresh.LookupByRef(ctx, "messaging", "act-1:sms")
	wantClass(t, err, httpprovider.ClassAmbiguous)
	s.Fault("messaging", "lookup_lag=1h", 1)
	recs, err = c.LookupByRef(ctx, "messaging", "act-1:sms")
	if err != nil || len(recs) != 0 {
		t.Fatalf("lagging lookup = %+v %v, want an empty answer", recs, err)
	}
}

// waitInFlight waits until the simulator is processing one write.
func waitInFlight(t *testing.T, s *simtest.Sim) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			InFlight int `json:"in_flight"`
		}
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if h.InFlight == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no write got in flight")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

// An answer that is not about the request sent is no evidence, whatever its
// status: a proxy that serves a cached or misrouted record must not confirm.
func TestAnswersAboutAnotherWriteAreAmbiguous(t *testing.T) {
	t.Parallel()
	other := `{"id":"cal_1","capability":"calendar","idempotency_key":"other","external_ref":"other","operation":"x","status":"committed","created_at":"2030-01-01T00:00:00Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, other)
		case r.URL.Query().Has("external_ref"):
			io.WriteString(w, `{"writes":[`+other+`]}`)
		case r.URL.Path == "/calendar/writes/by-key/junk":
			io.WriteString(w, `<html>not json</html>`)
		case r.URL.Path == "/calendar/writes/by-key/gone":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<html>404</html>`)
		default:
			io.WriteString(w, other)
		}
	}))
	t.Cleanup(srv.Close)
	c := &httpprovider.Client{BaseURL: srv.URL}
	_, err := c.Write(ctx, "calendar", "k-1", "act-1:book", "appointment.book", nil)
	wantClass(t, err, httpprovider.ClassAmbiguous)
	_, found, err := c.LookupByKey(ctx, "calendar", "k-1")
	wantClass(t, err, httpprovider.ClassAmbiguous)
	_, err = c.LookupByRef(ctx, "calendar", "act-1:book")
	wantClass(t, err, httpprovider.ClassAmbiguous)
	_, found, err = c.LookupByKey(ctx, "calendar", "junk")
	wantClass(t, err, httpprovider.ClassAmbiguous)
	_, found, err = c.LookupByKey(ctx, "calendar", "gone")
	if found || httpprovider.ClassOf(err) != httpprovider.ClassNotSent {
		t.Fatalf("a 404 without code NOT_FOUND: found=%v err=%v, want an inconclusive error", found, err)
	}
}
