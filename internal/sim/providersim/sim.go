// Package providersim is a remote provider that fails on purpose. It serves
// oncecall's provider protocol (docs/provider-protocol.md) for the calendar,
// payments, messaging and crm capabilities, keeps every write in a durable
// ledger that survives its own restart, lists that ledger for audits, and
// injects the failures of the external-write crash window on request:
// responses dropped after commit, failures before and after commit, delays,
// ignored idempotency keys and lookups that lag behind writes.
//
// cmd/providersim runs it as a program; tests start it in-process on port 0.
package providersim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// The capabilities the simulator serves.
const (
	Calendar  = "calendar"
	Payments  = "payments"
	Messaging = "messaging"
	CRM       = "crm"

	capabilityList = "calendar, payments, messaging, crm"
)

func isCapability(c string) bool {
	switch c {
	case Calendar, Payments, Messaging, CRM:
		return true
	}
	return false
}

// Config configures a simulator.
type Config struct {
	// Addr is the listen address. Default "127.0.0.1:8090"; port 0 picks one.
	Addr string
	// Ledger is the path of the JSON-lines ledger file, created if missing and
	// replayed at start. Empty keeps the ledger in memory: it does not survive
	// a restart.
	Ledger string
	// NoIdempotency makes the simulator a provider without idempotency
	// support: every write creates a new record, whatever its key.
	NoIdempotency bool
	// KeyRetention is how long a key is honoured (replays, by-key lookups).
	// Default 24h.
	KeyRetention time.Duration
	// LookupLag hides every write from lookups for this long after commit.
	LookupLag time.Duration
	// AuthToken, when set, is required as "Authorization: Bearer <token>" on
	// every request except /healthz.
	AuthToken string
	// MaxBodyBytes limits request bodies. Default 1 MiB.
	MaxBodyBytes int64
	// Log receives one JSON line per request (ids and key hashes only).
	Log zerolog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// StripeWebhookURL, when set, receives the Stripe mode's webhook
	// events, signed with StripeWebhookSecret (see stripe.go).
	StripeWebhookURL    string
	StripeWebhookSecret string
	// StripeCaptureWindow is how long the Stripe mode keeps a card hold
	// capturable (its latest charge's capture_before). Default 7 days.
	StripeCaptureWindow time.Duration
	// TwilioAccountSID and TwilioAuthToken are the Twilio mode's account
	// (see twilio.go). Defaults TwilioTestAccountSID and TwilioTestAuthToken.
	TwilioAccountSID, TwilioAuthToken string
}

// Main is a running simulator.
type Main struct {
	cfg    Config
	st     *state
	stripe *stripeState
	twilio *twilioState
	rules  *rules
	ln     net.Listener
	srv    *http.Server
	quit   chan struct{}
	once   sync.Once
}

// Start opens (or creates) the ledger, replays it and starts listening.
// Serve runs the server.
func Start(ctx context.Context, cfg Config) (*Main, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8090"
	}
	if cfg.StripeCaptureWindow <= 0 {
		cfg.StripeCaptureWindow = 7 * 24 * time.Hour
	}
	if cfg.KeyRetention <= 0 {
		cfg.KeyRetention = 24 * time.Hour
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var file *ledgerFile
	var events []event
	if cfg.Ledger != "" {
		var err error
		if file, events, err = openLedger(cfg.Ledger); err != nil {
			return nil, err
		}
	}
	m := &Main{cfg: cfg, st: newState(file, events), stripe: newStripeState(),
		twilio: newTwilioState(cfg.TwilioAccountSID, cfg.TwilioAuthToken), rules: &rules{}, quit: make(chan struct{})}
	m.SetStripeWebhook(cfg.StripeWebhookURL, cfg.StripeWebhookSecret)
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	m.ln = ln
	m.srv = &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}
	cfg.Log.Info().Str("addr", ln.Addr().String()).Int("writes", len(m.st.writes)).
		Bool("idempotency", !cfg.NoIdempotency).Str("ledger", cfg.Ledger).Msg("listening")
	return m, nil
}

// Addr is the address the simulator listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// URL is the simulator's base URL.
func (m *Main) URL() string { return "http://" + m.Addr() }

// Serve serves until ctx is done, then drains in-flight requests (delays
// are cut short: they answer 503 without writing).
func (m *Main) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- m.srv.Serve(m.ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	m.stopDelays()
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("drain requests: %w", err)
	}
	m.cfg.Log.Info().Msg("stopped")
	return nil
}

// Close stops listening, drops open connections and closes the ledger.
func (m *Main) Close() error {
	m.stopDelays()
	if m.srv != nil {
		m.srv.Close()
	} else if m.ln != nil {
		m.ln.Close()
	}
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.st.closed = true
	if m.st.file != nil {
		err := m.st.file.close()
		m.st.file = nil
		return err
	}
	return nil
}

func (m *Main) stopDelays() { m.once.Do(func() { close(m.quit) }) }
