package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/pgembed"
)

// Patroni's timing (see docs/high-availability.md). A killed leader's key
// expires after ttl, and only then does a standby take over: ttl is most
// of the write gap after a crash. Shorter is faster but demotes a healthy
// leader whose loop or DCS stalls for longer than retry_timeout, unless
// failsafe_mode (in the configuration) finds every other member reachable
// over the REST API: then a DCS outage demotes nobody. loop_wait + 2 ×
// retry_timeout stays within ttl.
const (
	patroniTTL          = 5
	patroniLoopWait     = 1
	patroniRetryTimeout = 2
)

// PatroniTiming is the timing the harness gives Patroni, for the output.
var PatroniTiming = fmt.Sprintf("ttl=%d loop_wait=%d retry_timeout=%d", patroniTTL, patroniLoopWait, patroniRetryTimeout)

// cluster is etcd and three Patroni-managed PostgreSQL nodes on loopback,
// in synchronous strict mode: a COMMIT on the leader answers once one
// standby has it, and only such a standby is promoted.
type cluster struct {
	dir      string
	etcdPort int
	etcd     *process
	nodes    []*pnode
	owner    *syscall.Credential
}

// pnode is one Patroni with its PostgreSQL.
type pnode struct {
	name            string
	pgPort, apiPort int
	dataDir, config string
	mu              sync.Mutex
	patroni         *process
}

// process is a child process and the end of its life.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startProcess(cmd *exec.Cmd, logPath string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own process group: Ctrl-C reaches the harness only, which stops
	// everything in order; and if the harness dies, the child is told.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait() //nolint:errcheck // killed on purpose, often
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// signal sends sig to the process (not its children).
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(sig) //nolint:errcheck // it may have just exited
	}
}

// stop asks the process to end (SIGTERM) and kills it after grace.
func (p *process) stop(grace time.Duration) {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// Binaries the cluster needs.
func clusterBinaries() (patroni, etcd string, err error) {
	if patroni, err = exec.LookPath("patroni"); err != nil {
		return "", "", errors.New("patroni is not on PATH (Debian: apt-get install patroni)")
	}
	if etcd, err = exec.LookPath("etcd"); err != nil {
		return "", "", errors.New("etcd is not on PATH (Debian: apt-get install etcd-server)")
	}
	return patroni, etcd, nil
}

// startCluster starts etcd on basePort (client) and basePort+1 (peer) and
// three Patroni nodes (REST API on basePort+10+i, PostgreSQL on
// basePort+20+i), waits for a leader with a synchronous standby and
// creates the database "oncecall".
func startCluster(ctx context.Context, dir string, basePort int, logf func(string, ...any)) (c *cluster, err error) {
	patroniBin, etcdBin, err := clusterBinaries()
	if err != nil {
		return nil, err
	}
	pgBin, err := pgembed.FindBinDir()
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(filepath.Join(pgBin, "postgres")); err == nil {
		pgBin = filepath.Dir(real)
	}
	c = &cluster{dir: dir, etcdPort: basePort}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root; Patroni runs it as itself.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, Patroni needs the postgres account: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.owner = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	etcdDir := filepath.Join(dir, "etcd")
	client := fmt.Sprintf("http://127.0.0.1:%d", basePort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", basePort+1)
	c.etcd, err = startProcess(exec.Command(etcdBin, "--name", "e0", "--data-dir", etcdDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e0="+peer, "--initial-cluster-state", "new"), filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	if err := waitFor(ctx, 30*time.Second, "etcd", func() bool {
		r, err := http.Get(client + "/health")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == http.StatusOK
	}); err != nil {
		return nil, err
	}
	for i := range 3 {
		n := &pnode{name: fmt.Sprintf("pg%d", i), apiPort: basePort + 10 + i, pgPort: basePort + 20 + i}
		n.dataDir = filepath.Join(dir, n.name)
		n.config = filepath.Join(dir, n.name+".yml")
		if err := os.WriteFile(n.config, []byte(patroniConfig(n, basePort, pgBin, dir)), 0o644); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		if err := c.startPatroni(n, patroniBin); err != nil {
			return nil, err
		}
		if i == 0 {
			// The first node bootstraps the cluster alone, so the others
			// join it as standbys instead of racing for the initdb.
			if _, err := c.waitHealthy(ctx, 90*time.Second, 1); err != nil {
				return nil, err
			}
		}
	}
	leader, err := c.waitHealthy(ctx, 120*time.Second, 3)
	if err != nil {
		return nil, err
	}
	logf("Patroni cluster up (%s), leader %s", PatroniTiming, leader.name)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", leader.pgPort))
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgembed.AppDatabase); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	return c, nil
}

// patroniConfig is node n's configuration: the recipe of
// docs/high-availability.md with loopback addresses.
func patroniConfig(n *pnode, basePort int, pgBin, dir string) string {
	return fmt.Sprintf(`scope: oncecall
name: %[1]s
restapi:
  listen: 127.0.0.1:%[2]d
  connect_address: 127.0.0.1:%[2]d
etcd3:
  hosts: 127.0.0.1:%[3]d
bootstrap:
  dcs:
    ttl: %[4]d
    loop_wait: %[5]d
    retry_timeout: %[6]d
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: true
    failsafe_mode: true
    postgresql:
      use_pg_rewind: true
      remove_data_directory_on_rewind_failure: true
      remove_data_directory_on_diverged_timelines: true
      parameters:
        wal_log_hints: "on"
        max_connections: 100
        max_wal_senders: 10
        wal_keep_size: 256MB
        hot_standby: "on"
        synchronous_commit: "on"
        wal_retrieve_retry_interval: 500ms
        fsync: "off"
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host replication all 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[7]d
  connect_address: 127.0.0.1:%[7]d
  data_dir: %[8]s
  bin_dir: %[9]s
  pgpass: %[10]s
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
  parameters:
    unix_socket_directories: %[11]s
tags:
  nofailover: false
  noloadbalance: false
`, n.name, n.apiPort, basePort, patroniTTL, patroniLoopWait, patroniRetryTimeout,
		n.pgPort, n.dataDir, pgBin, filepath.Join(dir, n.name+".pgpass"), dir)
}

// startPatroni starts n's Patroni, which starts (or rejoins with) its
// PostgreSQL.
func (c *cluster) startPatroni(n *pnode, bin string) error {
	cmd := exec.Command(bin, n.config)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "PATRONI_LOG_LEVEL=INFO")
	if c.owner != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.owner}
		if err := os.Chown(c.dir, int(c.owner.Uid), int(c.owner.Gid)); err != nil {
			return err
		}
	}
	p, err := startProcess(cmd, filepath.Join(c.dir, n.name+".log"))
	if err != nil {
		return fmt.Errorf("start patroni %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.patroni = p
	n.mu.Unlock()
	return nil
}

// patroniMember is one entry of Patroni's GET /cluster.
type patroniMember struct {
	Name  string `json:"name"`
	Role  string `json:"role"` // leader, sync_standby, replica
	State string `json:"state"`
	Lag   any    `json:"lag"`
}

// members asks any node's REST API for the cluster as the DCS holds it.
func (c *cluster) members() ([]patroniMember, error) {
	hc := http.Client{Timeout: time.Second}
	var last error
	for _, n := range c.nodes {
		r, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/cluster", n.apiPort))
		if err != nil {
			last = err
			continue
		}
		var body struct{ Members []patroniMember }
		err = json.NewDecoder(r.Body).Decode(&body)
		r.Body.Close()
		if err != nil {
			last = err
			continue
		}
		return body.Members, nil
	}
	return nil, fmt.Errorf("no Patroni REST API answered: %w", last)
}

// waitHealthy waits until want members run, one of them the leader and,
// with more than one, one a synchronous standby, and returns the leader.
func (c *cluster) waitHealthy(ctx context.Context, within time.Duration, want int) (*pnode, error) {
	var leader *pnode
	err := waitFor(ctx, within, fmt.Sprintf("a Patroni leader with %d running members", want), func() bool {
		ms, err := c.members()
		if err != nil {
			return false
		}
		running, sync := 0, 0
		leader = nil
		for _, m := range ms {
			if m.State == "running" || m.State == "streaming" {
				running++
			}
			switch m.Role {
			case "leader":
				if m.State == "running" {
					leader = c.node(m.Name)
				}
			case "sync_standby":
				if m.State == "streaming" || m.State == "running" {
					sync++
				}
			}
		}
		return leader != nil && running >= want && (want == 1 || sync >= 1)
	})
	return leader, err
}

func (c *cluster) node(name string) *pnode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// roles returns the current leader and synchronous standby (nil if none).
func (c *cluster) roles() (leader, sync *pnode) {
	ms, err := c.members()
	if err != nil {
		return nil, nil
	}
	for _, m := range ms {
		switch m.Role {
		case "leader":
			leader = c.node(m.Name)
		case "sync_standby":
			sync = c.node(m.Name)
		}
	}
	return leader, sync
}

// postmasterPID reads n's postmaster.pid.
func (n *pnode) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(n.dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// crash kills n's Patroni and postmaster with SIGKILL, as a machine that
// dies would, and waits until its server processes are gone. Start it
// again (startPatroni) once another node leads: it rejoins as a standby
// (pg_rewind). Restarted sooner, within ttl, it would find its leader key
// still valid and simply lead again.
func (c *cluster) crash(n *pnode) error {
	n.mu.Lock()
	p := n.patroni
	n.mu.Unlock()
	pid := n.postmasterPID()
	p.signal(syscall.SIGKILL)
	if pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // it may be gone already
	}
	<-p.done
	// The backends notice their postmaster died and exit; the restarted
	// Patroni must not find a live one holding the data directory.
	return waitFor(context.Background(), 30*time.Second, "the killed server's processes to exit", func() bool {
		return pid <= 0 || syscall.Kill(pid, 0) != nil
	})
}

// switchover asks Patroni for a planned switchover away from leader.
func (c *cluster) switchover(leader *pnode) error {
	body, _ := json.Marshal(map[string]string{"leader": leader.name})
	hc := http.Client{Timeout: 30 * time.Second}
	r, err := hc.Post(fmt.Sprintf("http://127.0.0.1:%d/switchover", leader.apiPort), "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("switchover: %w", err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(r.Body) //nolint:errcheck // for the message only
		return fmt.Errorf("switchover: %s: %s", r.Status, strings.TrimSpace(b.String()))
	}
	return nil
}

// walReceiverPID is the pid of n's WAL receiver, 0 if it has none.
func (n *pnode) walReceiverPID(ctx context.Context) int {
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", n.pgPort))
	if err != nil {
		return 0
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var pid int
	if conn.QueryRow(ctx, "SELECT coalesce(max(pid), 0) FROM pg_stat_wal_receiver").Scan(&pid) != nil {
		return 0
	}
	return pid
}

// url is the multi-host URL of the database "oncecall": the client
// connects to whichever node accepts writes.
func (c *cluster) url() string {
	hosts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", n.pgPort)
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/" + pgembed.AppDatabase +
		"?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

// stop ends every process the cluster started: each Patroni stops its
// PostgreSQL (fast shutdown), then etcd; whatever does not end in time is
// killed, postmasters included.
func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		n.mu.Lock()
		p := n.patroni
		n.mu.Unlock()
		if p == nil {
			continue
		}
		wg.Go(func() {
			p.stop(30 * time.Second)
			if pid := n.postmasterPID(); pid > 0 && syscall.Kill(pid, 0) == nil {
				syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // last resort
			}
		})
	}
	wg.Wait()
	if c.etcd != nil {
		c.etcd.signal(syscall.SIGCONT)
		c.etcd.stop(10 * time.Second)
	}
}

// waitFor polls cond until it holds, for at most within.
func waitFor(ctx context.Context, within time.Duration, what string, cond func() bool) error {
	end := time.Now().Add(within)
	for !cond() {
		if time.Now().After(end) {
			return fmt.Errorf("waited %v for %s", within, what)
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}
