// Package apptest starts the real oncecall program for end-to-end tests: its
// own database cloned from the migrated template, the HTTP server on a free
// port, captured logs, and small helpers to call it. Every answer received
// through an Env is checked against openapi.yaml (see Contract).
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Env is one running oncecall with its own database.
type Env struct {
	t     testing.TB
	URL   string
	DBURL string
	Store *db.Store
	Main  *app.Main
	Logs  *simtest.Buffer
	// Client sends requests through Contract: use it (or Request) for
	// every call, so that every answer is checked against openapi.yaml.
	Client   *http.Client
	Contract *Contract
}

// Start runs oncecall on a fresh database; cfg may adjust the configuration
// (DatabaseURL, Addr and Log are set by Start unless cfg sets them).
func Start(t testing.TB, cfg ...func(*app.Config)) *Env {
	t.Helper()
	return StartOn(t, pgtest.NewDB(t), cfg...)
}

// StartOn is Start on the database at dbURL (from pgtest.NewDB), for tests
// that reach it in another way too: cfg may point DatabaseURL at a proxy of
// it, and DBURL stays the direct URL.
func StartOn(t testing.TB, dbURL string, cfg ...func(*app.Config)) *Env {
	t.Helper()
	e := &Env{t: t, DBURL: dbURL, Logs: &simtest.Buffer{}}
	e.Contract = NewContract(t, nil)
	e.Client = &http.Client{Transport: e.Contract}
	c := app.Config{
		Addr: "127.0.0.1:0", DatabaseURL: e.DBURL,
		Log: zerolog.New(e.Logs).With().Timestamp().Logger(),
	}
	for _, f := range cfg {
		f(&c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m, err := app.Start(ctx, c)
	if err != nil {
		cancel()
		t.Fatalf("start oncecall: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		m.Close()
	})
	e.Main, e.Store, e.URL = m, m.Store(), "http://"+m.Addr()
	return e
}

// Tenant creates a tenant and returns it with its API key.
func (e *Env) Tenant(name string) (oncecall.Tenant, string) {
	e.t.Helper()
	t, key, err := e.Store.CreateTenant(context.Background(), name, "")
	if err != nil {
		e.t.Fatalf("create tenant: %v", err)
	}
	return t, key
}

// Customer creates a customer of tenant directly in the database.
func (e *Env) Customer(tenant uuid.UUID) uuid.UUID {
	e.t.Helper()
	c, err := e.Store.CreateCustomer(context.Background(), db.NewCustomer{TenantID: tenant, Name: "Test Customer"})
	if err != nil {
		e.t.Fatalf("create customer: %v", err)
	}
	return c.ID
}

// Slot creates a free slot of tenant starting n hours from now.
func (e *Env) Slot(tenant uuid.UUID, n int) uuid.UUID {
	e.t.Helper()
	start := time.Now().UTC().Truncate(time.Hour).Add(time.Duration(n+1) * time.Hour)
	s, err := e.Store.CreateSlot(context.Background(), db.NewSlot{TenantID: tenant, StartsAt: start, EndsAt: start.Add(time.Hour)})
	if err != nil {
		e.t.Fatalf("create slot: %v", err)
	}
	return s.ID
}

// Response is a received answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map, failing the test if it is not JSON.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response %d is not JSON: %v: %s", r.Status, err, r.Body)
	}
	return m
}

// Replayed reports whether the answer carries Idempotent-Replayed: true.
func (r Response) Replayed() bool { return r.Header.Get("Idempotent-Replayed") == "true" }

// Request sends a request; body may be nil, a string or []byte (sent as is),
// or any value (sent as JSON). headers are name/value pairs.
func (e *Env) Request(method, path, apiKey string, body any, headers ...string) Response {
	e.t.Helper()
	r, err := e.RequestCtx(context.Background(), method, path, apiKey, body, headers...)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// RequestCtx is Request bound to ctx: it returns an error, ctx's when ctx
// ended first, instead of failing the test when no answer arrives.
func (e *Env) RequestCtx(ctx context.Context, method, path, apiKey string, body any, headers ...string) (Response, error) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, rd)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("read body: %w", err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Post sends a JSON write with an Idempotency-Key (none when idemKey is "").
func (e *Env) Post(path, apiKey, idemKey string, body any, headers ...string) Response {
	e.t.Helper()
	if idemKey != "" {
		headers = append(headers, "Idempotency-Key", idemKey)
	}
	return e.Request(http.MethodPost, path, apiKey, body, headers...)
}

// Get sends a GET.
func (e *Env) Get(path, apiKey string) Response {
	e.t.Helper()
	return e.Request(http.MethodGet, path, apiKey, nil)
}

// Count runs a count query (a fixed SQL text in the test) against the
// environment's database.
func (e *Env) Count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatalf("count: %v", err)
	}
	return n
}
