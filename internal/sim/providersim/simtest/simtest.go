// Package simtest starts the provider simulator for tests: in-process on a
// free port (with Stop and Restart on the same address and ledger, to make
// the provider refuse connections and come back), or as a real child process
// built from cmd/providersim that a test can SIGKILL.
package simtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// Sim is an in-process simulator.
type Sim struct {
	t   testing.TB
	cfg providersim.Config
	// URL is the base URL; it stays the same across Stop and Restart.
	URL string
	// Admin sets faults and reads the ledger.
	Admin providersim.Admin
	// Logs holds the simulator's log lines.
	Logs *Buffer

	main *providersim.Main
	stop func()
}

// Start runs a simulator on 127.0.0.1 with a free port and a ledger file in
// a temporary folder, unless cfg sets Addr or Ledger. It stops at cleanup.
func Start(t testing.TB, cfg providersim.Config) *Sim {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Ledger == "" {
		cfg.Ledger = filepath.Join(t.TempDir(), "ledger.jsonl")
	}
	s := &Sim{t: t, cfg: cfg, Logs: &Buffer{}}
	s.cfg.Log = zerolog.New(s.Logs).With().Timestamp().Logger()
	s.start()
	s.cfg.Addr = s.main.Addr()
	s.URL = s.main.URL()
	s.Admin = providersim.Admin{BaseURL: s.URL, Token: cfg.AuthToken}
	t.Cleanup(s.Stop)
	return s
}

func (s *Sim) start() {
	s.t.Helper()
	m, err := providersim.Start(context.Background(), s.cfg)
	if err != nil {
		s.t.Fatalf("start providersim: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	s.main = m
	s.stop = func() {
		m.Close()
		if err := <-done; err != nil {
			s.t.Errorf("providersim serve: %v", err)
		}
		cancel()
	}
}

// Stop shuts the simulator down: its address refuses connections until
// Restart. The ledger stays on disk.
func (s *Sim) Stop() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// Restart stops the simulator if it runs and starts it again on the same
// address and ledger. Fault rules set through the control endpoint are gone.
func (s *Sim) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Fault sets a fault for the next count writes of a capability ("*" for
// all; 0 until cleared).
func (s *Sim) Fault(capability, fault string, count int) providersim.Rule {
	s.t.Helper()
	r, err := s.Admin.Fault(context.Background(), capability, fault, count)
	if err != nil {
		s.t.Fatalf("set fault %s: %v", fault, err)
	}
	return r
}

// Ledger lists the committed writes of a capability ("" for all).
func (s *Sim) Ledger(capability string) []providersim.LedgerEntry {
	s.t.Helper()
	l, err := s.Admin.Ledger(context.Background(), capability)
	if err != nil {
		s.t.Fatalf("read ledger: %v", err)
	}
	return l
}

// SetStripeWebhook points the Stripe mode's signed webhooks at url.
func (s *Sim) SetStripeWebhook(url, secret string) { s.main.SetStripeWebhook(url, secret) }

// StripeLedger lists the Stripe mode's PaymentIntents.
func (s *Sim) StripeLedger() []providersim.StripePaymentIntent {
	s.t.Helper()
	l, err := s.Admin.StripeLedger(context.Background())
	if err != nil {
		s.t.Fatalf("read stripe ledger: %v", err)
	}
	return l
}

// StripeSessions lists the Stripe mode's Checkout Sessions.
func (s *Sim) StripeSessions() []providersim.StripeCheckoutSession { return s.main.StripeSessions() }

// StripePay pays an open Checkout Session, as its customer would.
func (s *Sim) StripePay(id string) {
	s.t.Helper()
	if err := s.main.StripePay(id); err != nil {
		s.t.Fatal(err)
	}
}

// StripeExpire expires an open Checkout Session unpaid.
func (s *Sim) StripeExpire(id string) {
	s.t.Helper()
	if err := s.main.StripeExpire(id); err != nil {
		s.t.Fatal(err)
	}
}

// ResendStripeEvent delivers a signed event about a Checkout Session again.
func (s *Sim) ResendStripeEvent(typ, id string) {
	s.t.Helper()
	if err := s.main.ResendStripeEvent(typ, id); err != nil {
		s.t.Fatal(err)
	}
}

// TwilioLedger lists the Twilio mode's messages.
func (s *Sim) TwilioLedger() []providersim.TwilioMessage {
	s.t.Helper()
	l, err := s.Admin.TwilioLedger(context.Background())
	if err != nil {
		s.t.Fatalf("read twilio ledger: %v", err)
	}
	return l
}

// SetTwilioCallbacks sets the Twilio mode's callback faults.
func (s *Sim) SetTwilioCallbacks(c providersim.TwilioCallbacks) { s.main.SetTwilioCallbacks(c) }

// SetTwilioDelivery sets what becomes of the Twilio mode's later messages.
func (s *Sim) SetTwilioDelivery(d providersim.TwilioDelivery) { s.main.SetTwilioDelivery(d) }

// TwilioAccount is the Twilio mode's account SID and auth token.
func (s *Sim) TwilioAccount() (sid, token string) { return s.main.TwilioAccount() }

// Process is a simulator running as a child process.
type Process struct {
	t testing.TB
	// Addr and URL are where it listens.
	Addr, URL string
	// Admin sets faults and reads the ledger.
	Admin providersim.Admin
	// Logs holds its stderr.
	Logs *Buffer

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, set before done closes
}

// StartProcess runs bin with args (add --addr 127.0.0.1:0 unless args set
// --addr) and waits, up to 20s, until it logs the address it listens on.
// The process is killed at cleanup.
func StartProcess(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(strings.TrimLeft(a, "-"), "addr") }) {
		args = append(args, "--addr", "127.0.0.1:0")
	}
	p := &Process{t: t, Logs: &Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), "LOG_LEVEL=info")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			p.Logs.Write(append(slices.Clone(line), '\n'))
			var l struct{ Message, Addr string }
			if json.Unmarshal(line, &l) == nil && l.Message == "listening" && l.Addr != "" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Kill)
	select {
	case a := <-addr:
		p.Addr, p.URL = a, "http://"+a
		p.Admin = providersim.Admin{BaseURL: p.URL}
	case <-p.done:
		t.Fatalf("providersim exited before listening (%v):\n%s", p.err, p.Logs)
	case <-time.After(20 * time.Second):
		t.Fatalf("providersim did not start within 20s:\n%s", p.Logs)
	}
	return p
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Buffer is a goroutine-safe log sink.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*Buffer)(nil)
