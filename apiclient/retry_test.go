package apiclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/apiclient"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// attempt is what a test server saw of one request.
type attempt struct {
	method, key string
	body        []byte
}

// scripted answers the i-th request with statuses[i] (0: drop the
// connection without an answer) and records every request.
type scripted struct {
	mu       sync.Mutex
	statuses []int
	seen     []attempt
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := len(s.seen)
	s.seen = append(s.seen, attempt{r.Method, r.Header.Get("Idempotency-Key"), body})
	status := http.StatusCreated
	if i < len(s.statuses) {
		status = s.statuses[i]
	}
	s.mu.Unlock()
	if status == 0 {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if status == http.StatusConflict {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(status)
	io.WriteString(w, `{}`)
}

func (s *scripted) attempts() []attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]attempt(nil), s.seen...)
}

func post(t *testing.T, r *apiclient.Retry, url, key string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader([]byte(`{"slot_id":"s1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := r.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	return resp, err
}

// TestRetryResendsTheSameKeyUntilAnAnswerIsFinal: a dropped connection, 409,
// 429, 502, 503 and 504 are retried with the same Idempotency-Key and body;
// 400, 422 and the other business answers are final at once; a write
// without a key is never retried; attempts run out with the last answer.
func TestRetryResendsTheSameKeyUntilAnAnswerIsFinal(t *testing.T) {
	t.Parallel()
	retry := &apiclient.Retry{Base: time.Millisecond, Max: 5 * time.Millisecond}
	for _, tc := range []struct {
		name     string
		statuses []int
		key      string
		attempts int
		status   int
	}{
		{"lost answers then created", []int{0, 0, 201}, "k1", 3, 201},
		{"in progress, unavailable, then created", []int{409, 503, 502, 504, 201}, "k2", 5, 201},
		{"rate limited then created", []int{429, 201}, "k3", 2, 201},
		{"rejected is final", []int{422, 201}, "k4", 1, 422},
		{"bad request is final", []int{400, 201}, "k5", 1, 400},
		{"not found is final", []int{404, 201}, "k6", 1, 404},
		{"unauthorized is final", []int{401, 201}, "k7", 1, 401},
		{"no key: never retried", []int{503, 201}, "", 1, 503},
		{"out of attempts", []int{503, 503, 503, 503, 503, 503}, "k8", 5, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &scripted{statuses: tc.statuses}
			srv := httptest.NewServer(s)
			defer srv.Close()
			resp, err := post(t, retry, srv.URL+"/v1/appointments", tc.key)
			if err != nil {
				t.Fatalf("error %v, want %d", err, tc.status)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			seen := s.attempts()
			if len(seen) != tc.attempts {
				t.Fatalf("%d attempts, want %d", len(seen), tc.attempts)
			}
			for i, a := range seen {
				if a.key != tc.key || string(a.body) != `{"slot_id":"s1"}` || a.method != http.MethodPost {
					t.Fatalf("attempt %d sent %s key %q body %s", i+1, a.method, a.key, a.body)
				}
			}
		})
	}

	t.Run("only lost answers", func(t *testing.T) {
		t.Parallel()
		s := &scripted{statuses: []int{0, 0, 0}}
		srv := httptest.NewServer(s)
		defer srv.Close()
		_, err := post(t, &apiclient.Retry{Attempts: 3, Base: time.Millisecond}, srv.URL, "k9")
		if err == nil || len(s.attempts()) != 3 {
			t.Fatalf("after 3 lost answers: %v, %d attempts", err, len(s.attempts()))
		}
	})

	t.Run("the context ends the waiting", func(t *testing.T) {
		t.Parallel()
		s := &scripted{statuses: []int{503, 503, 503}}
		srv := httptest.NewServer(s)
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader([]byte(`{}`)))
		req.Header.Set("Idempotency-Key", "k10")
		start := time.Now()
		_, err := (&apiclient.Retry{Base: time.Minute, Max: time.Minute}).Do(req)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second || len(s.attempts()) != 1 {
			t.Fatalf("%v after %v and %d attempts", err, time.Since(start), len(s.attempts()))
		}
	})
}

// lossy sends each request to oncecall but loses the answer to the first
// ones: the booking happened, the caller saw only a network error.
type lossy struct {
	mu   sync.Mutex
	lose int
	next apiclient.HttpRequestDoer
}

func (l *lossy) Do(req *http.Request) (*http.Response, error) {
	resp, err := l.next.Do(req)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.lose > 0 {
		l.lose--
		resp.Body.Close()
		return nil, errors.New("connection reset by peer")
	}
	return resp, err
}

// TestRetryAfterALostAnswerBooksOnce: against oncecall, a booking whose
// answers were lost twice is retried with its key and receives the stored
// answer; the database holds one booking and one action.
func TestRetryAfterALostAnswerBooksOnce(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	tenant, key := e.Tenant("acme")
	customer, slot := e.Customer(tenant.ID), e.Slot(tenant.ID, 24)
	doer := &lossy{lose: 2, next: e.Client}
	c, err := apiclient.NewClientWithResponses(e.URL,
		apiclient.WithHTTPClient(&apiclient.Retry{Doer: doer, Base: time.Millisecond}),
		apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.BookAppointmentWithResponse(t.Context(), &apiclient.BookAppointmentParams{IdempotencyKey: "book-" + uuid.NewString()},
		apiclient.BookAppointmentJSONRequestBody{CustomerId: customer, SlotId: slot})
	if err != nil {
		t.Fatalf("book: %v", err)
	}
	if r.StatusCode() != http.StatusCreated || r.JSON201 == nil || r.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after two lost answers: %d replayed %q %s", r.StatusCode(), r.HTTPResponse.Header.Get("Idempotent-Replayed"), r.Body)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1 AND status = 'active'", slot); n != 1 {
		t.Fatalf("%d bookings of the slot, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND operation = 'appointment.book'", tenant.ID); n != 1 {
		t.Fatalf("%d booking actions, want 1", n)
	}
}
