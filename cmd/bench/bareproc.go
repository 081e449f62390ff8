package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
)

// When oncecall runs as a process of its own, the baseline stack (floor,
// bare, peer) runs as one too: the bench starts its own executable again
// with bareEnv set. A request that crosses from the load generator's
// process into a server's costs more than one answered inside the same Go
// runtime (two schedulers and two heaps on the same cores, and the wake-ups
// between them), so a floor measured inside the bench would understate what
// an HTTP request costs oncecall and overstate every bound built on it.

// bareEnv, when set in the environment, makes the executable serve the
// baseline stack (serveBare) instead of running the bench. Its value is the
// database URL.
const bareEnv = "ONCECALL_BENCH_BARE_DATABASE_URL"

// bareAddrEnv and bareControlEnv are the child's listen addresses: the
// measured stack, and the control port on which the bench registers API keys.
const (
	bareAddrEnv    = "ONCECALL_BENCH_BARE_ADDR"
	bareControlEnv = "ONCECALL_BENCH_BARE_CONTROL_ADDR"
)

// bareKey is what the control port takes: an API key and its tenant.
type bareKey struct {
	Key    string    `json:"key"`
	Tenant uuid.UUID `json:"tenant"`
}

// serveBare is the child's main: the baseline stack on its own pool (the
// server's default size and timeouts), access lines on stdout, until
// SIGTERM.
func serveBare(dbURL string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pool, err := app.OpenPool(ctx, dbURL, "", app.DefaultMaxConns(), db.Timeouts{})
	if err != nil {
		return err
	}
	defer pool.Close()
	keys := newKeyMap()
	srv := bareServer(newBare(db.New(pool), keys, zerolog.New(os.Stdout).With().Timestamp().Logger()))
	control := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var k bareKey
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&k) != nil || k.Key == "" {
			http.Error(w, "POST {\"key\", \"tenant\"}", http.StatusBadRequest)
			return
		}
		keys.add(k.Key, k.Tenant)
		w.WriteHeader(http.StatusNoContent)
	}), ReadHeaderTimeout: 5 * time.Second}

	ln, err := net.Listen("tcp", os.Getenv(bareAddrEnv))
	if err != nil {
		return err
	}
	cln, err := net.Listen("tcp", os.Getenv(bareControlEnv))
	if err != nil {
		return err
	}
	failed := make(chan error, 2)
	go func() { failed <- srv.Serve(ln) }()
	go func() { failed <- control.Serve(cln) }()
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(sctx), control.Shutdown(sctx))
}

// startBareProcess runs the baseline stack as a child process on dbURL.
func (b *bench) startBareProcess(ctx context.Context, dbURL string) error {
	ctx, cancel := context.WithTimeout(ctx, serveStartTimeout)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the bench's executable: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	controlAddr, err := freeAddr()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), bareEnv+"="+dbURL, bareAddrEnv+"="+addr, bareControlEnv+"="+controlAddr)
	logs := &tail{size: 16 << 10}
	cmd.Stdout, cmd.Stderr = logs, logs
	b.bareURL, b.bareControl = "http://"+addr, "http://"+controlAddr
	if err := b.startChild(ctx, cmd, "the baseline server", b.bareURL+"/v1/floor", http.StatusUnauthorized, logs); err != nil {
		return err
	}
	b.parts = append(b.parts, part{name: "baseline", pid: cmd.Process.Pid})
	return nil
}

// addBareKey lets the baseline stack authenticate key as tenant.
func (b *bench) addBareKey(ctx context.Context, key string, tenant uuid.UUID) error {
	if b.bareControl == "" {
		b.bareKeys.add(key, tenant)
		return nil
	}
	body, err := json.Marshal(bareKey{Key: key, Tenant: tenant})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.bareControl, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("register a key with the baseline server: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("register a key with the baseline server: HTTP %d", resp.StatusCode)
	}
	return nil
}

// freeAddr is a free address on the loopback interface to listen on.
func freeAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(port)), nil
}
