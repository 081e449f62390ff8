package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

const metricsToken = "metrics-token-for-tests"

// scrape reads /metrics and parses it as Prometheus text.
func scrape(t *testing.T, e *apptest.Env) map[string]*dto.MetricFamily {
	t.Helper()
	r := e.Get("/metrics", metricsToken)
	if r.Status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !bytes.HasPrefix([]byte(ct), []byte("text/plain")) {
		t.Fatalf("/metrics content type %q", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v\n%s", err, r.Body)
	}
	return fams
}

// value is the sample of family name whose labels include want; a counter,
// gauge or histogram (its count). Missing samples are 0.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0
}

func TestMetricsMoveWithAScenario(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) {
		c.MetricsToken = metricsToken
		c.MetricsCacheTTL = time.Nanosecond // every scrape counts afresh
	})
	tenant, key := e.Tenant("acme")
	b := bookingEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}

	for _, tok := range []string{"", "wrong"} {
		if r := e.Get("/metrics", tok); r.Status != http.StatusUnauthorized || r.JSON(t)["code"] != "UNAUTHORIZED" {
			t.Fatalf("/metrics with token %q: %d %s", tok, r.Status, r.Body)
		}
	}
	before := scrape(t, e)
	const book = "appointment.book"
	if value(before, "oncecall_claims_total", "operation", book) != 0 || value(before, "oncecall_db_pool_max_conns") != float64(app.DefaultMaxConns()) {
		t.Fatalf("unexpected starting values")
	}

	mustStatus := func(r apptest.Response, status int) {
		t.Helper()
		if r.Status != status {
			t.Fatalf("got %d, want %d: %s", r.Status, status, r.Body)
		}
	}
	mustStatus(b.book("k1", b.slot), http.StatusCreated)
	mustStatus(b.book("k1", b.slot), http.StatusCreated)                          // replay, from memory
	mustStatus(b.book("k1", b.Slot(b.tenant, 2)), http.StatusUnprocessableEntity) // key reused
	rival := map[string]any{"customer_id": b.Customer(b.tenant), "slot_id": b.slot}
	mustStatus(b.Post("/v1/appointments", b.key, "k2", rival), http.StatusUnprocessableEntity) // slot taken

	// An attempt still running (inserted as a concurrent claimer would
	// leave it) turns a same-key request away; an unknown action waits for
	// an operator.
	busy := map[string]any{"customer_id": b.customer, "slot_id": b.Slot(b.tenant, 3)}
	raw, _ := json.Marshal(busy)
	prepared, err := app.Operations().MustGet(book).Prepare(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Store.Pool().Exec(t.Context(), `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, lease_until)
		VALUES ($1, $2, 'busy', $3, $4, $5, now() + interval '1 minute')`,
		uuid.Must(uuid.NewV7()), b.tenant, book, prepared.Fingerprint, prepared.Input)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Store.Pool().Exec(t.Context(), `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, needs_operator)
		VALUES ($1, $2, 'lost', $3, 'fp', '{}', 'unknown', true)`, uuid.Must(uuid.NewV7()), b.tenant, book)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(b.Post("/v1/appointments", b.key, "busy", busy), http.StatusConflict)

	after := scrape(t, e)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"oncecall_claims_total", []string{"operation", book}, 2},
		{"oncecall_outcomes_total", []string{"operation", book, "outcome", "confirmed"}, 1},
		{"oncecall_outcomes_total", []string{"operation", book, "outcome", "rejected"}, 1},
		{"oncecall_replays_total", []string{"operation", book}, 1},
		{"oncecall_replays_kept_total", []string{"operation", book}, 1},
		{"oncecall_key_mismatches_total", []string{"operation", book}, 1},
		{"oncecall_in_progress_total", []string{"operation", book}, 1},
		{"oncecall_http_requests_total", []string{"route", "/v1/appointments", "method", "POST", "status", "201"}, 2},
		{"oncecall_http_requests_total", []string{"route", "/v1/appointments", "method", "POST", "status", "422"}, 2},
		{"oncecall_http_requests_total", []string{"route", "/v1/appointments", "method", "POST", "status", "409"}, 1},
		{"oncecall_http_request_duration_seconds", []string{"route", "/v1/appointments"}, 5},
		{"oncecall_actions", []string{"state", "running"}, 1},
		{"oncecall_actions", []string{"state", "unknown"}, 1},
		{"oncecall_needs_operator_actions", nil, 1},
	}
	for _, c := range checks {
		if got := value(after, c.name, c.labels...) - value(before, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := value(after, "oncecall_http_requests_total", "route", "/metrics", "method", "GET", "status", "401"); got != 2 {
		t.Errorf("refused scrapes counted %v times, want 2", got)
	}
	if value(after, "oncecall_db_pool_acquires_total") <= value(before, "oncecall_db_pool_acquires_total") {
		t.Errorf("pool acquires did not move")
	}
	for _, name := range []string{"go_goroutines", "oncecall_process_cpu_seconds_total", "oncecall_db_pool_idle_conns"} {
		if after[name] == nil {
			t.Errorf("%s is missing", name)
		}
	}
}

func TestServePrunesOnItsInterval(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) { c.PruneInterval = 20 * time.Millisecond })
	tenant, _ := e.Tenant("acme")
	_, err := e.Store.Pool().Exec(t.Context(), `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state,
		                     outcome, http_status, result, completed_at)
		VALUES ($1, $2, 'old', 'appointment.book', 'fp', '{}', 'completed', 'confirmed', 201, '{}', now() - interval '31 days'),
		       ($3, $2, 'recent', 'appointment.book', 'fp', '{}', 'completed', 'confirmed', 201, '{}', now() - interval '2 days')`,
		uuid.Must(uuid.NewV7()), tenant.ID, uuid.Must(uuid.NewV7()))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'old'")+
		e.Count("SELECT count(*) FROM actions WHERE result IS NOT NULL") > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not prune within 10s")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising on time
	}
	if got := e.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'recent'"); got != 1 {
		t.Fatalf("the recent action was deleted")
	}
	fams := scrape(t, e)
	// The old body may go on its own first, if a run saw the rows only
	// between deleting actions and clearing bodies.
	if a, r := value(fams, "oncecall_prune_deleted_total", "kind", "action"), value(fams, "oncecall_prune_deleted_total", "kind", "response"); a != 1 || r < 1 || r > 2 {
		t.Fatalf("prune_deleted_total: action %v response %v, want 1 and 1 or 2", a, r)
	}
}
