package api

import (
	"cmp"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
	"github.com/oncecall/oncecall/internal/tokenguard"
)

// Config is what the router needs.
type Config struct {
	Store *db.Store
	Core  *idem.Core
	// Ops is the operation registry, the operations REST writes and tool
	// calls run (not the operator API at /v1/ops, see OperatorToken).
	Ops *op.Registry
	Log zerolog.Logger
	// MaxBodyBytes limits request bodies (413 beyond). Default 64 KiB.
	MaxBodyBytes int64
	// KeyCacheTTL is how long an API key's tenant is cached. Default 30s.
	KeyCacheTTL time.Duration
	// MaxWait caps Prefer: wait=N. Default 10s.
	MaxWait time.Duration
	// Remote reports whether a capability is served by a remote provider;
	// nil means every capability is local.
	Remote idem.Remotes
	// Calendars, when set, are the tenants' own calendars: a connected
	// tenant's bookings go there, and what callers hear of them is read
	// there (calendars.go).
	Calendars Calendars
	// OperatorToken guards the operator API, /v1/ops (operator.go); empty
	// disables those routes. OperatorGuard checks it and slows down
	// guessing it; the console's sign-in shares it (default: a guard of
	// OperatorToken of its own).
	OperatorToken string
	OperatorGuard *tokenguard.Guard
	// Operator shows and resolves actions for the operator API: the same
	// service the console calls (reconcile.Operator).
	Operator oncecall.OperatorService
	// Console, when set, serves the operator console under /console/.
	Console http.Handler
	// DashaWait bounds how long a Dasha tool call waits for an attempt of
	// the same action that is still running before answering pending.
	// Default 5s, within DashaBudget.
	DashaWait time.Duration
	// DashaBudget is the time a Dasha tool call has from its arrival to its
	// answer; whatever is still running then (a slow remote provider) goes
	// on without it and the call answers pending. Default
	// dashatool.AnswerBudget (8s), under Dasha's 10s webhook limit.
	DashaBudget time.Duration
	// Metrics, when set, counts requests and is served at /metrics.
	Metrics *metrics.Metrics
	// MetricsToken, when set, is the Bearer token /metrics requires.
	MetricsToken string
	// RateLimit is each tenant's sustained request rate per second; zero
	// disables the limit. RateBurst is the bucket size (default: the rate).
	RateLimit float64
	RateBurst int
	// DashaRateLimit and DashaRateBurst are the same for the Dasha webhooks
	// (tool calls and call events), a separate budget that answers 503 with
	// Retry-After instead of 429. Zero DashaRateLimit disables it.
	DashaRateLimit float64
	DashaRateBurst int
	// TenantRequests is how many requests of one tenant may run at once,
	// so that one tenant cannot hold every database connection; zero
	// disables the limit. A request waits up to TenantWait (default 1s)
	// for its turn, then gets 503.
	TenantRequests int
	TenantWait     time.Duration
	// DBRequests is how many requests, all tenants together, may use the
	// database at once (the pool's size); zero disables the bound. A
	// request past it waits up to DBWait (default 250ms) for a place and
	// is refused with 503 and Retry-After when none came, at once when 8
	// requests a place wait already (serverQueue).
	// A tenant's share as large as DBRequests is no limit of its own.
	DBRequests int
	DBWait     time.Duration
	// BodyReadTimeout bounds the read of a request's body (default 5s),
	// which is read whole before the request takes its tenant's turn.
	BodyReadTimeout time.Duration
	// StripeWebhookSecret, when set, serves Stripe's signed webhooks at
	// /v1/providers/stripe/webhook (stripe_webhook.go).
	StripeWebhookSecret string
	// TwilioAuthToken, when set, serves Twilio's signed status callbacks at
	// /v1/providers/twilio/status (twilio_status.go); PublicURL is the base
	// URL Twilio was given for them.
	TwilioAuthToken, PublicURL string
	// LateResultURL reports whether a Vapi call's control URL may be
	// posted a late result (voice_late.go); nil: https on vapi.ai and its
	// subdomains only.
	LateResultURL func(u *url.URL) bool
	// Jobs, when set, gets the workers of the River jobs this API's
	// handlers work: the late results' deliveries (voice_late_worker.go).
	Jobs *river.Workers
}

// DefaultDBWait is how long a request waits for one of the server's
// places in the database by default (Config.DBWait).
const DefaultDBWait = 250 * time.Millisecond

// Server holds the handlers' dependencies.
type Server struct {
	cfg     Config
	keys    *keyCache
	limiter *tenantLimiter // nil when unlimited
	// dashaLimiter is the Dasha webhooks' budget; nil when unlimited.
	dashaLimiter *tenantLimiter
	gate         *tenantGate // nil when unlimited
	server       *tenantGate // the server's admission control; nil when unbounded
}

// NewRouter returns oncecall's HTTP handler.
func NewRouter(cfg Config) http.Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 64 << 10
	}
	if cfg.KeyCacheTTL <= 0 {
		cfg.KeyCacheTTL = 30 * time.Second
	}
	cfg.BodyReadTimeout = cmp.Or(cfg.BodyReadTimeout, 5*time.Second)
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 10 * time.Second
	}
	if cfg.DashaWait <= 0 {
		cfg.DashaWait = 5 * time.Second
	}
	cfg.DashaBudget = cmp.Or(cfg.DashaBudget, dashatool.AnswerBudget)
	if cfg.OperatorGuard == nil {
		cfg.OperatorGuard = tokenguard.New(cfg.OperatorToken, tokenguard.Config{})
	}
	s := &Server{cfg: cfg, keys: newKeyCache(cfg.Store, cfg.KeyCacheTTL)}
	if cfg.RateLimit > 0 {
		s.limiter = newTenantLimiter(cfg.RateLimit, cfg.RateBurst)
	}
	if cfg.DashaRateLimit > 0 {
		s.dashaLimiter = newTenantLimiter(cfg.DashaRateLimit, cfg.DashaRateBurst)
	}
	if cfg.DBRequests > 0 {
		s.server = newServerGate(cfg.DBRequests, cmp.Or(cfg.DBWait, DefaultDBWait))
	}
	if cfg.TenantRequests > 0 && (s.server == nil || cfg.TenantRequests < cfg.DBRequests) {
		s.gate = newTenantGate(cfg.TenantRequests, cmp.Or(cfg.TenantWait, time.Second))
	}

	if cfg.Jobs != nil {
		river.AddWorker(cfg.Jobs, &lateWorker{s: s})
	}

	r := chi.NewRouter()
	r.Use(serverSpan, safeRequestID, middleware.RequestID, accessLog(cfg.Log, cfg.Metrics), recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, fault.New(fault.NotFound, "no such route"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, fault.New(fault.MethodNotAllowed, "method not allowed on this route"))
	})
	r.Get("/livez", s.livez)
	r.Get("/readyz", s.readyz)
	if cfg.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", s.serveMetrics())
	}

	if cfg.Console != nil {
		r.Handle("/console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
		r.Handle("/console/*", cfg.Console)
	}
	r.Route("/v1/ops", func(r chi.Router) {
		r.Use(s.limitBody, s.operatorOnly)
		r.Get("/actions", s.operatorListActions)
		r.Get("/actions/{action_id}", s.operatorShowAction)
		r.Post("/actions/{action_id}/resolve", s.operatorResolveAction)
	})
	if cfg.StripeWebhookSecret != "" {
		r.With(s.limitBody).Post("/v1/providers/stripe/webhook", s.stripeWebhook)
	}
	// Verified by the connection's notification secret, not an API key.
	r.With(s.limitBody).Post("/v1/calendar-notifications/{provider}/{connection}", s.calendarNotification)
	if cfg.TwilioAuthToken != "" {
		r.With(s.limitBody).Post(twilioprovider.StatusPath, s.twilioStatus)
	}
	// Each voice platform's webhooks are a sub-router of their own, with
	// their own middleware: the answer budget, authentication with a key
	// whose scope opens the platform (full, voice or the platform's own),
	// the Dasha rate budget.
	r.Mount("/v1/dasha", s.voiceRouter(platformDasha, "", func(r chi.Router) {
		r.Post("/tools", s.dashaTool)
		r.Post("/tools/{toolName}", s.dashaTool)
		r.Post("/events", s.dashaEvent)
	}))
	r.Mount("/v1/vapi", s.voiceRouter(platformVapi, "X-Vapi-Secret", func(r chi.Router) {
		r.Post("/webhook", s.vapiWebhook)
	}))
	r.Mount("/v1/retell", s.voiceRouter(platformRetell, "", func(r chi.Router) {
		r.Post("/functions/{tool}", s.retellFunction)
	}))
	r.Mount("/v1/elevenlabs", s.voiceRouter(platformElevenLabs, "X-Oncecall-Key", func(r chi.Router) {
		r.Post("/tools/{tool}", s.elevenLabsTool)
		r.Post("/async/tools/{tool}", s.elevenLabsAsyncTool)
	}))
	r.Route("/v1", func(r chi.Router) {
		r.Use(s.limitBody, s.keys.authenticate)
		r.Group(func(r chi.Router) {
			r.Use(fullScopeOnly, s.limitRate, s.bodyFirst)
			// Writes take a place in the tenant's share of the database
			// themselves, while the core runs them (see write); reads hold
			// one for the whole request.
			// Every write is the route openapi.yaml gives it (routes.go).
			for _, w := range mustWriteRoutes() {
				r.Method(w.method, w.path, s.write(w.operation, w.params...))
			}

			r.Group(func(r chi.Router) {
				r.Use(s.shareDB)
				// Every read is the route openapi.yaml gives its operationId
				// (routes.go, Server.reads).
				for _, rd := range s.mustReadRoutes() {
					r.Get(rd.path, rd.handler)
				}
			})
		})
	})
	return r
}

// voiceRouter is the sub-router of one voice platform's webhooks: body
// limit, the voice budget (from before authentication, so that every wait
// of the call ends within it), the platform's secret header as an
// alternative to Authorization (secretHeader, when not empty), an API key
// whose scope opens the platform, then the Dasha rate budget and the
// tenant's share of the database. routes adds the platform's routes.
func (s *Server) voiceRouter(platform, secretHeader string, routes func(r chi.Router)) http.Handler {
	r := chi.NewRouter()
	if platform == platformElevenLabs {
		// ElevenLabs hides a webhook tool's errors from the agent: every
		// refusal is answered 200 with outcome and say (voice_refusals.go).
		r.Use(answerRefusals)
	}
	r.Use(s.limitBody, s.voiceBudget)
	if secretHeader != "" {
		r.Use(keyFromHeader(secretHeader))
	}
	r.Use(s.keys.authenticate, platformOnly(platform), s.limitDasha, s.bodyFirst, s.shareDB)
	routes(r)
	return r
}

// limitBody caps request bodies; reading past the cap fails with
// *http.MaxBytesError, answered 413.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxBodyBytes {
			writeError(w, r, fault.New(fault.PayloadTooLarge, "the request body exceeds %d bytes", s.cfg.MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}
