package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// build compiles cmd/oncecall into dir and returns the binary's path.
func build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "oncecall")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/oncecall/oncecall/cmd/oncecall").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build oncecall: %w\n%s", err, out)
	}
	return bin, nil
}

// replica is one `oncecall serve` child process.
type replica struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and its output is read
}

// kill sends SIGKILL and waits until the process is gone.
func (r *replica) kill() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill() // it may have exited on its own meanwhile
	<-r.done
}

// fleetEnv is what every replica is started with; the caller's own
// DATABASE_URL, ONCECALL_* and LOG_LEVEL never leak into a replica.
func fleetEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || name == "LOG_LEVEL" || strings.HasPrefix(name, "ONCECALL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// startReplica runs `oncecall serve` on listen (port 0: a free one) and waits until it logs
// the address it serves on. Its stderr is appended to logPath.
func startReplica(ctx context.Context, bin string, env []string, logPath, listen string) (*replica, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r := &replica{done: make(chan struct{})}
	r.cmd = exec.Command(bin, "serve", "--addr", listen)
	r.cmd.Env = env
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start oncecall: %w", err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(r.done)
		defer logFile.Close()
		rd := bufio.NewReaderSize(stderr, 64<<10)
		for {
			line, err := rd.ReadBytes('\n')
			logFile.Write(line) //nolint:errcheck // a lost log line does not change the audit
			var l struct{ Message, Addr string }
			if json.Unmarshal(line, &l) == nil && l.Message == "serving" && l.Addr != "" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
			if err != nil {
				break
			}
		}
		r.cmd.Wait() //nolint:errcheck // a killed replica exits non-zero by design
	}()
	select {
	case a := <-addr:
		r.url = "http://" + a
		return r, nil
	case <-r.done:
		return nil, fmt.Errorf("oncecall exited before serving (see %s)", logPath)
	case <-ctx.Done():
		r.kill()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		r.kill()
		return nil, fmt.Errorf("oncecall did not serve within 30s (see %s)", logPath)
	}
}

// replicas is the fleet of oncecall processes on one database. Clients pick
// a live one per attempt; a killed replica's slot is empty until its
// restart serves (on a new port).
type replicas struct {
	bin, dir string
	env      []string
	// addrs, when set, is the address of each slot; otherwise a free port.
	addrs []string

	mu    sync.Mutex
	slots []*replica // nil while down
	kills int
}

func (rs *replicas) logPath(slot int) string {
	return filepath.Join(rs.dir, fmt.Sprintf("oncecall-%d.log", slot))
}

// start brings slot up, retrying while it cannot start (the database may
// be down: serve migrates at start and exits when it cannot).
func (rs *replicas) start(ctx context.Context, slot int, within time.Duration) error {
	end := time.Now().Add(within)
	delay := 100 * time.Millisecond
	for {
		addr := "127.0.0.1:0"
		if rs.addrs != nil {
			addr = rs.addrs[slot]
		}
		r, err := startReplica(ctx, rs.bin, rs.env, rs.logPath(slot), addr)
		if err == nil {
			rs.mu.Lock()
			rs.slots[slot] = r
			rs.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil || time.Now().Add(delay).After(end) {
			return fmt.Errorf("replica %d: %w", slot, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// killOne SIGKILLs a random live replica and returns its slot, or -1.
func (rs *replicas) killOne(rng *rand.Rand) int {
	rs.mu.Lock()
	var live []int
	for i, r := range rs.slots {
		if r != nil {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		rs.mu.Unlock()
		return -1
	}
	slot := live[rng.IntN(len(live))]
	r := rs.slots[slot]
	rs.slots[slot] = nil
	rs.kills++
	rs.mu.Unlock()
	r.kill()
	return slot
}

// pick returns the URL of a random live replica, or "" when none is up.
func (rs *replicas) pick(rng *rand.Rand) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := rng.IntN(len(rs.slots))
	for i := range rs.slots {
		if r := rs.slots[(n+i)%len(rs.slots)]; r != nil {
			return r.url
		}
	}
	return ""
}

// serves reports whether url is a live replica's.
func (rs *replicas) serves(url string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.slots {
		if r != nil && r.url == url {
			return true
		}
	}
	return false
}

func (rs *replicas) live() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for _, r := range rs.slots {
		if r != nil {
			n++
		}
	}
	return n
}

// exited counts the replicas that ended on their own (none was killed).
func (rs *replicas) exited() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for _, r := range rs.slots {
		if r == nil {
			continue
		}
		select {
		case <-r.done:
			n++
		default:
		}
	}
	return n
}

func (rs *replicas) killCount() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.kills
}

// stopAll kills every replica (the run is over; nothing they would still do
// matters to the audit, which has been taken).
func (rs *replicas) stopAll() {
	rs.mu.Lock()
	all := rs.slots
	rs.slots = make([]*replica, len(all))
	rs.mu.Unlock()
	for _, r := range all {
		if r != nil {
			r.kill()
		}
	}
}

// errNoReplica: every replica is down at the moment.
var errNoReplica = errors.New("no replica is up")
