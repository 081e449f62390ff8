package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// DemoSimulated are the capabilities `make run`'s demo serves by the
// provider simulator: their effects are outside oncecall (a card charged, a
// message sent), which oncecall's own tables cannot perform. Without a
// provider a charge is refused and a message only recorded; with the
// simulator, a provider performs them, in its ledger, and nothing real is
// charged or sent.
var DemoSimulated = []string{provider.Payments, provider.Messaging}

// simulatorLedger is the simulator's ledger file in the embedded database's
// data directory: it lives as long as the actions whose steps it answered.
const simulatorLedger = "providersim-ledger.jsonl"

// simulate starts the provider simulator in this process when cfg.Simulate
// names a capability that cfg.Providers does not serve, and returns the
// providers with the simulator serving those capabilities. The simulator
// listens on a free port of 127.0.0.1 and stops with Close.
func (m *Main) simulate(ctx context.Context, cfg Config) (provider.Set, error) {
	providers := maps.Clone(cfg.Providers)
	if providers == nil {
		providers = provider.Set{}
	}
	var missing []string
	for _, c := range cfg.Simulate {
		if _, ok := providers.Remote(c); !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return providers, nil
	}
	sc := providersim.Config{Addr: "127.0.0.1:0", Log: cfg.Log.With().Str("component", "providersim").Logger()}
	if m.pg != nil {
		sc.Ledger = filepath.Join(m.dataDir(), simulatorLedger)
	}
	sim, err := providersim.Start(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("start the provider simulator: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- sim.Serve(context.WithoutCancel(ctx)) }()
	m.sim, m.simServed = sim, served
	p := provider.NewHTTP(provider.HTTPConfig{
		BaseURL: sim.URL(), Timeout: 5 * time.Second,
		Traits: provider.Traits{HonoursKeys: true, KeyRetention: 24 * time.Hour, AuthoritativeLookup: true},
	})
	for _, c := range missing {
		providers[c] = p
	}
	m.simulated = missing
	cfg.Log.Info().Str("url", sim.URL()).Strs("capabilities", missing).
		Msg("provider simulator serving; nothing real is charged or sent")
	return providers, nil
}

// Simulator is the base URL of the provider simulator this process runs
// and the capabilities it serves; "" when it runs none.
func (m *Main) Simulator() (url string, capabilities []string) {
	if m.sim == nil {
		return "", nil
	}
	return m.sim.URL(), m.simulated
}

// closeSimulator stops the simulator, if any, and closes its ledger.
func (m *Main) closeSimulator() error {
	if m.sim == nil {
		return nil
	}
	err := m.sim.Close()
	if serr := <-m.simServed; serr != nil {
		err = errors.Join(err, serr)
	}
	m.sim = nil
	return err
}
