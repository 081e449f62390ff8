// Package metrics owns oncecall's Prometheus metrics: one registry per
// running program (no global state), the counters the HTTP layer and the
// idempotency core report to, and collectors that read the action table and
// the connection pool when scraped. Every name is prefixed oncecall_.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
)

const namespace = "oncecall"

// Config configures Metrics.
type Config struct {
	// Actions counts actions by state for the actions gauges; nil leaves
	// them out.
	Actions func(context.Context) (db.ActionCounts, error)
	// Pool is reported as oncecall_db_pool_*; nil leaves it out.
	Pool *pgxpool.Pool
	// CacheTTL is how long action counts are reused between scrapes, so
	// that frequent or concurrent scrapes cost one query. Default 10s.
	CacheTTL time.Duration
	// Log receives scrape errors.
	Log zerolog.Logger
}

// Metrics is the registry of one running oncecall and its instruments. The
// methods are safe for concurrent use and cheap enough for the hot path.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	claims          *prometheus.CounterVec
	replays         *prometheus.CounterVec
	replaysKept     *prometheus.CounterVec
	mismatches      *prometheus.CounterVec
	inProgress      *prometheus.CounterVec
	outcomes        *prometheus.CounterVec
	pruned          *prometheus.CounterVec
	rateLimited     prometheus.Counter
	reconcile       *prometheus.CounterVec
	providerCalls   *prometheus.HistogramVec
}

// New returns Metrics with a fresh registry holding every instrument, the
// Go runtime and process collectors, and the configured collectors.
func New(cfg Config) *Metrics {
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 10 * time.Second
	}
	byOp := []string{"operation"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "claims_total",
			Help: "Requests that claimed their key and executed the action.",
		}, byOp),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "replays_total",
			Help: "Requests answered from an existing action without executing it.",
		}, byOp),
		replaysKept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "replays_kept_total",
			Help: "Replays answered from the answers this replica keeps in memory, without the database (part of replays_total).",
		}, byOp),
		mismatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "key_mismatches_total",
			Help: "Requests rejected because their key belongs to another request (IDEMPOTENCY_KEY_REUSED).",
		}, byOp),
		inProgress: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "in_progress_total",
			Help: "Requests answered IDEMPOTENCY_IN_PROGRESS because an earlier attempt still ran.",
		}, byOp),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "outcomes_total",
			Help: "Outcomes of executed actions (confirmed, rejected, pending), by operation.",
		}, []string{"operation", "outcome"}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "prune_deleted_total",
			Help: "Rows pruned by retention: kind=response (a replayable body cleared) or kind=action (an action deleted).",
		}, []string{"kind"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "rate_limited_total",
			Help: "Requests answered 429 RATE_LIMITED by the per-tenant rate limit.",
		}),
		reconcile: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reconcile_results_total",
			Help: "Results of reconciliation attempts on unknown or abandoned actions.",
		}, []string{"result"}),
		providerCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "provider_call_duration_seconds",
			Help:    "Latency of calls to remote providers, by capability.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"capability"}),
	}
	m.reg.MustRegister(
		m.requests, m.requestDuration, m.claims, m.replays, m.replaysKept, m.mismatches, m.inProgress, m.outcomes,
		m.pruned, m.rateLimited, m.reconcile, m.providerCalls,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: namespace}),
	)
	if cfg.Actions != nil {
		m.reg.MustRegister(newActionsCollector(cfg.Actions, cfg.CacheTTL, cfg.Log))
	}
	if cfg.Pool != nil {
		m.reg.MustRegister(poolCollector{cfg.Pool})
	}
	return m
}

// Registry is the registry holding every metric (tests, extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:            m.reg,
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		// Exemplars (the trace ids of latencies) are served only in the
		// OpenMetrics format, to a scraper that asks for it.
		EnableOpenMetrics: true,
		Timeout:           10 * time.Second,
	})
}

// Request records one answered HTTP request. route is the matched route
// pattern ("" when none matched), so label values stay bounded.
func (m *Metrics) Request(ctx context.Context, route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
	default:
		method = "other"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	observe(ctx, m.requestDuration.WithLabelValues(route), d.Seconds())
}

// The idempotency core's events (idem.Observer).
var _ idem.Observer = (*Metrics)(nil)

// Executed counts an action this request claimed and ran, and its outcome.
func (m *Metrics) Executed(operation string, outcome idem.Outcome) {
	m.claims.WithLabelValues(operation).Inc()
	m.outcomes.WithLabelValues(operation, string(outcome)).Inc()
}

// Replayed counts an answer given from an existing action, and those
// given from the answers kept in memory.
func (m *Metrics) Replayed(operation string, kept bool) {
	m.replays.WithLabelValues(operation).Inc()
	if kept {
		m.replaysKept.WithLabelValues(operation).Inc()
	}
}

// KeyReused counts a key reused for another request.
func (m *Metrics) KeyReused(operation string) { m.mismatches.WithLabelValues(operation).Inc() }

// InProgress counts a request turned away while an earlier attempt ran.
func (m *Metrics) InProgress(operation string) { m.inProgress.WithLabelValues(operation).Inc() }

// Pruned counts rows removed by retention (prune.Config.Pruned).
func (m *Metrics) Pruned(kind string, n int64) { m.pruned.WithLabelValues(kind).Add(float64(n)) }

// RateLimited counts a request refused by the rate limit.
func (m *Metrics) RateLimited() { m.rateLimited.Inc() }

// ReconcileResult counts one reconciliation attempt's result (for example
// confirmed, rejected, inconclusive, needs_operator).
func (m *Metrics) ReconcileResult(result string) { m.reconcile.WithLabelValues(result).Inc() }

// ProviderCall records the latency of one call to a remote provider.
func (m *Metrics) ProviderCall(ctx context.Context, capability string, d time.Duration) {
	observe(ctx, m.providerCalls.WithLabelValues(capability), d.Seconds())
}

// observe records v in a latency histogram with the trace id of ctx's
// sampled span as its exemplar, so that a slow bucket leads to a trace
// (served in the OpenMetrics format, which a scraper asks for).
func observe(ctx context.Context, h prometheus.Observer, v float64) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if eo, ok := h.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	h.Observe(v)
}

// actionsCollector reports oncecall_actions{state} and
// oncecall_needs_operator_actions from a query run at most once per TTL.
type actionsCollector struct {
	count func(context.Context) (db.ActionCounts, error)
	ttl   time.Duration
	log   zerolog.Logger

	byState       *prometheus.Desc
	needsOperator *prometheus.Desc

	mu      sync.Mutex
	last    db.ActionCounts
	fetched time.Time
}

func newActionsCollector(count func(context.Context) (db.ActionCounts, error), ttl time.Duration, log zerolog.Logger) *actionsCollector {
	return &actionsCollector{
		count: count, ttl: ttl, log: log,
		byState: prometheus.NewDesc(namespace+"_actions",
			"Actions by state: running and unknown exactly, completed estimated from table statistics.",
			[]string{"state"}, nil),
		needsOperator: prometheus.NewDesc(namespace+"_needs_operator_actions",
			"Unresolved actions waiting for an operator.", nil, nil),
	}
}

func (c *actionsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byState
	ch <- c.needsOperator
}

// Collect reports the cached counts, refreshing them when older than the
// TTL. Scrapes arriving together wait for one query. When the database does
// not answer, the gauges are left out of the scrape rather than reported
// stale.
func (c *actionsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last.ByState == nil || time.Since(c.fetched) >= c.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		counts, err := c.count(ctx)
		cancel()
		if err != nil {
			c.log.Warn().Err(err).Msg("metrics: count actions")
			return
		}
		c.last, c.fetched = counts, time.Now()
	}
	for state, n := range c.last.ByState {
		ch <- prometheus.MustNewConstMetric(c.byState, prometheus.GaugeValue, float64(n), string(state))
	}
	ch <- prometheus.MustNewConstMetric(c.needsOperator, prometheus.GaugeValue, float64(c.last.NeedsOperator))
}

// poolCollector reports the connection pool's statistics.
type poolCollector struct{ pool *pgxpool.Pool }

var poolDescs = struct {
	acquired, idle, total, max, acquires, acquireSeconds, emptyAcquires, canceledAcquires *prometheus.Desc
}{
	acquired: prometheus.NewDesc(namespace+"_db_pool_acquired_conns", "Connections in use.", nil, nil),
	idle:     prometheus.NewDesc(namespace+"_db_pool_idle_conns", "Idle connections.", nil, nil),
	total:    prometheus.NewDesc(namespace+"_db_pool_total_conns", "Open connections (in use, idle and being opened).", nil, nil),
	max:      prometheus.NewDesc(namespace+"_db_pool_max_conns", "The pool's connection limit.", nil, nil),
	acquires: prometheus.NewDesc(namespace+"_db_pool_acquires_total", "Connections acquired from the pool.", nil, nil),
	acquireSeconds: prometheus.NewDesc(namespace+"_db_pool_acquire_duration_seconds_total",
		"Total time spent waiting to acquire connections.", nil, nil),
	emptyAcquires: prometheus.NewDesc(namespace+"_db_pool_empty_acquires_total",
		"Acquires that had to wait because no connection was idle.", nil, nil),
	canceledAcquires: prometheus.NewDesc(namespace+"_db_pool_canceled_acquires_total",
		"Acquires abandoned because their context ended.", nil, nil),
}

func (p poolCollector) Describe(ch chan<- *prometheus.Desc) {
	d := poolDescs
	for _, desc := range []*prometheus.Desc{d.acquired, d.idle, d.total, d.max, d.acquires, d.acquireSeconds, d.emptyAcquires, d.canceledAcquires} {
		ch <- desc
	}
}

func (p poolCollector) Collect(ch chan<- prometheus.Metric) {
	s, d := p.pool.Stat(), poolDescs
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
	counter := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v)
	}
	gauge(d.acquired, float64(s.AcquiredConns()))
	gauge(d.idle, float64(s.IdleConns()))
	gauge(d.total, float64(s.TotalConns()))
	gauge(d.max, float64(s.MaxConns()))
	counter(d.acquires, float64(s.AcquireCount()))
	counter(d.acquireSeconds, s.AcquireDuration().Seconds())
	counter(d.emptyAcquires, float64(s.EmptyAcquireCount()))
	counter(d.canceledAcquires, float64(s.CanceledAcquireCount()))
}
