// Package pgembed owns running a private PostgreSQL server from the
// machine's own server binaries (initdb, postgres): creating the cluster,
// supervising the postmaster as a child process, and stopping, restarting or
// crashing it. It is meant for development (`serve` without DATABASE_URL) and
// tests; it never touches a system-wide cluster.
//
// The postmaster is started directly rather than through pg_ctl so that this
// process knows its PID (for Kill), sees it exit, and can route its output to
// any io.Writer.
package pgembed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Superuser is the role initdb creates; every URL connects as it.
const Superuser = "postgres"

// AppDatabase is created by Start if missing, so the application always has
// a database to migrate.
const AppDatabase = "oncecall"

const (
	defaultUser           = "postgres"
	defaultMaxConnections = 200

	// startTimeout bounds waiting for readiness when the caller's context has
	// no deadline; crash recovery of a dev-sized cluster takes seconds.
	startTimeout = 2 * time.Minute
	// stopTimeout is how long a fast shutdown may take before the server is
	// told to shut down immediately instead.
	stopTimeout = time.Minute
	// portAttempts is how many free ports Start tries when the one it picked
	// was taken by someone else before postgres could bind it.
	portAttempts = 5
)

// Config describes the cluster to run.
type Config struct {
	// DataDir is where the cluster lives. It is created (initdb) if it holds
	// no cluster yet and reused otherwise.
	DataDir string
	// BinDir holds initdb and postgres; empty means FindBinDir.
	BinDir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// User is the OS account postgres runs as when this process is root
	// (postgres refuses to run as root); default "postgres". Ignored
	// otherwise: the server then runs as the current user.
	//
	// Every directory above DataDir must be searchable by that account;
	// Start reports the first one that is not rather than loosening
	// permissions it did not set.
	User string
	// Log receives the output of initdb and the server. If nil, it is
	// appended to the file "<DataDir>.log" next to the data directory (not
	// inside it: initdb needs an empty directory, and a sibling file survives
	// wiping the cluster).
	Log io.Writer
	// Fast trades durability for speed (fsync, synchronous_commit and
	// full_page_writes off): for throwaway test clusters only, since an OS
	// crash can corrupt the cluster.
	Fast bool
	// MaxConnections is max_connections; 0 means 200.
	MaxConnections int
	// Settings are further server settings (name to value), passed as -c
	// options after every other: e.g. synchronous_standby_names for a
	// primary, primary_conninfo for a standby made by BaseBackup.
	Settings map[string]string
}

// Postgres is a running (or stopped) private server. Its methods are safe
// for concurrent use.
type Postgres struct {
	dataDir  string
	binDir   string
	port     int
	fast     bool
	maxConns int
	settings map[string]string
	log      io.Writer // nil: append to logPath for each run
	logPath  string
	owner    *account // nil: run as the current user

	mu  sync.Mutex
	run *run // nil when stopped
}

// run is one lifetime of the postmaster.
type run struct {
	cmd      *exec.Cmd
	sockDir  string
	closeLog func()
	tail     *tailBuffer
	exited   chan struct{} // closed once the postmaster and its output are done
	waitErr  error         // valid after exited is closed
}

// ErrNoBinaries means no PostgreSQL server installation was found.
var ErrNoBinaries = errors.New("pgembed: PostgreSQL server binaries (initdb, postgres) not found on PATH or in the usual install locations; " +
	"install them (e.g. `apt-get install postgresql` on Debian/Ubuntu, `brew install postgresql` on macOS) " +
	"or set DATABASE_URL to an existing database")

// FindBinDir returns a directory containing initdb and postgres: the one on
// PATH if any, else the newest version in a well-known install location.
func FindBinDir() (string, error) {
	return findBinDir([]string{
		"/usr/lib/postgresql/*/bin",          // Debian, Ubuntu
		"/usr/pgsql-*/bin",                   // PGDG RPMs
		"/opt/homebrew/opt/postgresql@*/bin", // Homebrew (Apple silicon), keg-only versions
		"/usr/local/opt/postgresql@*/bin",    // Homebrew (Intel)
	})
}

// findBinDir searches PATH, then installGlobs, in which the part matched by
// * is the major version, used to prefer the newest.
func findBinDir(installGlobs []string) (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(p); hasServerBinaries(dir) {
			return dir, nil
		}
		// Some setups link only a few binaries into PATH; the installation
		// they point at has the rest.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if dir := filepath.Dir(real); hasServerBinaries(dir) {
				return dir, nil
			}
		}
	}
	type found struct {
		dir     string
		version []int
	}
	var all []found
	for _, pattern := range installGlobs {
		prefix, suffix, _ := strings.Cut(pattern, "*")
		matches, _ := filepath.Glob(pattern) // only ErrBadPattern, and ours are valid
		for _, dir := range matches {
			if !hasServerBinaries(dir) {
				continue
			}
			v := strings.TrimSuffix(strings.TrimPrefix(dir, prefix), suffix)
			all = append(all, found{dir, parseVersion(v)})
		}
	}
	if len(all) == 0 {
		return "", ErrNoBinaries
	}
	best := all[0]
	for _, f := range all[1:] {
		if slices.Compare(f.version, best.version) > 0 {
			best = f
		}
	}
	return best.dir, nil
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// parseVersion turns "15" or "9.6" into comparable numbers; anything that is
// not a number sorts as 0.
func parseVersion(s string) []int {
	var v []int
	for part := range strings.SplitSeq(s, ".") {
		n, _ := strconv.Atoi(part)
		v = append(v, n)
	}
	return v
}

// newPostgres resolves cfg: the data directory, the binaries and, when this
// process is root, the account postgres runs as.
func newPostgres(cfg Config) (*Postgres, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("pgembed: Config.DataDir is required")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgembed: %w", err)
	}
	p := &Postgres{
		dataDir:  dataDir,
		binDir:   cfg.BinDir,
		port:     cfg.Port,
		fast:     cfg.Fast,
		maxConns: cfg.MaxConnections,
		settings: cfg.Settings,
		log:      cfg.Log,
		logPath:  dataDir + ".log",
	}
	if p.binDir == "" {
		if p.binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	if p.maxConns <= 0 {
		p.maxConns = defaultMaxConnections
	}
	if os.Geteuid() == 0 {
		name := cfg.User
		if name == "" {
			name = defaultUser
		}
		if p.owner, err = lookupAccount(name); err != nil {
			return nil, fmt.Errorf("pgembed: postgres cannot run as root and needs an OS account to run as: %w", err)
		}
	}
	return p, nil
}

// BaseBackup fills cfg.DataDir, which must not hold a cluster yet, with a
// copy of primary taken by pg_basebackup, marked to start as its standby
// (standby.signal). Start it with Start(cfg), giving primary_conninfo in
// cfg.Settings (with the application_name the primary's
// synchronous_standby_names expects).
func BaseBackup(ctx context.Context, primary *Postgres, cfg Config) error {
	p, err := newPostgres(cfg)
	if err != nil {
		return err
	}
	if err := p.prepareDataDir(); err != nil {
		return err
	}
	out, closeOut, err := p.openLog()
	if err != nil {
		return err
	}
	defer closeOut()
	tail := newTailBuffer()
	// A bin directory on PATH may hold links to initdb and postgres only;
	// pg_basebackup sits next to what postgres links to.
	if real, err := filepath.EvalSymlinks(filepath.Join(p.binDir, "postgres")); err == nil {
		p.binDir = filepath.Dir(real)
	}
	cmd := p.command(ctx, "pg_basebackup", "-D", p.dataDir, "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port()),
		"-U", Superuser, "-X", "stream", "-R", "--no-sync", "--checkpoint=fast")
	cmd.Stdout = io.MultiWriter(out, tail)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgembed: pg_basebackup into %s: %w\n%s", p.dataDir, err, tail.Lines(20))
	}
	return nil
}

// Start initialises the cluster if needed, starts the server, waits until it
// accepts connections and makes sure the database "oncecall" exists.
func Start(ctx context.Context, cfg Config) (*Postgres, error) {
	p, err := newPostgres(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.prepareDataDir(); err != nil {
		return nil, err
	}
	if err := p.initdb(ctx); err != nil {
		return nil, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	pickPort := p.port == 0
	for attempt := 1; ; attempt++ {
		if pickPort {
			if p.port, err = freePort(); err != nil {
				return nil, fmt.Errorf("pgembed: pick a port: %w", err)
			}
		}
		err = p.start(ctx)
		if _, inUse := errors.AsType[*portInUseError](err); !inUse || !pickPort || attempt == portAttempts {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if err := p.ensureDatabase(ctx, AppDatabase); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// URL is the connection URL for database dbname as the superuser, over TCP.
func (p *Postgres) URL(dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)),
		Path:     "/" + dbname,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port is the TCP port the server listens on.
func (p *Postgres) Port() int { return p.port }

// DataDir is the absolute path of the cluster.
func (p *Postgres) DataDir() string { return p.dataDir }

// Stop shuts the server down (fast shutdown: clients are disconnected, a
// checkpoint is written) and waits until every server process has exited.
// Stopping a stopped server does nothing.
func (p *Postgres) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stop()
}

// Restart stops the server and starts it again on the same port and data.
func (p *Postgres) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stop(); err != nil {
		return err
	}
	return p.start(ctx)
}

// Kill sends SIGKILL to the postmaster, as a crash would, and waits until
// its remaining processes have noticed and exited. A later Start or Restart
// on the same data goes through crash recovery.
func (p *Postgres) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.run
	if r == nil {
		return nil
	}
	if err := killProcess(r.cmd.Process.Pid); err != nil && !r.hasExited() {
		return fmt.Errorf("pgembed: kill postmaster: %w", err)
	}
	<-r.exited
	p.cleanupRun()
	return nil
}

func (p *Postgres) prepareDataDir() error {
	if err := os.MkdirAll(filepath.Dir(p.dataDir), 0o755); err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	// initdb would create it too, but creating it here lets it be chowned
	// before initdb runs as the unprivileged owner.
	if err := os.Mkdir(p.dataDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("pgembed: %w", err)
	}
	if p.owner == nil {
		return nil
	}
	if err := p.owner.checkSearchable(filepath.Dir(p.dataDir)); err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	if err := p.owner.chownTree(p.dataDir); err != nil {
		return fmt.Errorf("pgembed: hand %s to %s: %w", p.dataDir, p.owner.name, err)
	}
	return nil
}

func (p *Postgres) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(p.dataDir, "PG_VERSION")); err == nil {
		return nil
	}
	args := []string{
		"-D", p.dataDir,
		"--auth=trust",
		"--username=" + Superuser,
		"--encoding=UTF8",
		"--no-locale",
	}
	if p.fast {
		args = append(args, "--no-sync")
	}
	out, closeOut, err := p.openLog()
	if err != nil {
		return err
	}
	defer closeOut()
	tail := newTailBuffer()
	cmd := p.command(ctx, "initdb", args...)
	cmd.Stdout = io.MultiWriter(out, tail)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgembed: initdb %s: %w\n%s", p.dataDir, err, tail.Lines(20))
	}
	return nil
}

// start launches the postmaster and waits until it accepts connections.
// p.mu must be held and the server stopped.
func (p *Postgres) start(ctx context.Context) error {
	if err := p.removeStalePIDFile(); err != nil {
		return err
	}
	sockDir, err := p.makeSocketDir()
	if err != nil {
		return err
	}
	out, closeOut, err := p.openLog()
	if err != nil {
		os.RemoveAll(sockDir)
		return err
	}
	args := []string{
		"-D", p.dataDir,
		"-p", strconv.Itoa(p.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + sockDir,
		"-c", "max_connections=" + strconv.Itoa(p.maxConns),
	}
	if p.fast {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	for _, name := range slices.Sorted(maps.Keys(p.settings)) {
		args = append(args, "-c", name+"="+p.settings[name])
	}
	r := &run{sockDir: sockDir, closeLog: closeOut, tail: newTailBuffer(), exited: make(chan struct{})}
	// Not bound to ctx: the server outlives Start.
	r.cmd = p.command(context.Background(), "postgres", args...)
	r.cmd.Stdout = io.MultiWriter(out, r.tail)
	r.cmd.Stderr = r.cmd.Stdout
	// Backends inherit the output pipe, so Wait returning means every server
	// process is gone; the delay only guards against a wedged child.
	r.cmd.WaitDelay = 10 * time.Second
	detach(r.cmd)
	if err := r.cmd.Start(); err != nil {
		closeOut()
		os.RemoveAll(sockDir)
		return fmt.Errorf("pgembed: start postgres: %w", err)
	}
	go func() {
		r.waitErr = r.cmd.Wait()
		close(r.exited)
	}()
	p.run = r

	if err := p.waitReady(ctx, r); err != nil {
		p.stop()
		return err
	}
	return nil
}

// waitReady polls over the private unix socket, which only our postmaster
// can be listening on, so a foreign server that grabbed the TCP port cannot
// be mistaken for ours.
func (p *Postgres) waitReady(ctx context.Context, r *run) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	connString := p.socketURL(r.sockDir, "postgres")
	delay := 10 * time.Millisecond
	for {
		conn, err := pgx.Connect(ctx, connString)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-r.exited:
			if strings.Contains(r.tail.String(), "could not bind") {
				return &portInUseError{port: p.port, log: r.tail.Lines(20)}
			}
			return fmt.Errorf("pgembed: postgres exited during startup (%v)\n%s", r.waitErr, r.tail.Lines(20))
		case <-ctx.Done():
			return fmt.Errorf("pgembed: postgres not ready: %w (last error: %v)\n%s", ctx.Err(), err, r.tail.Lines(20))
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

func (p *Postgres) socketURL(sockDir, dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Path:     "/" + dbname,
		RawQuery: url.Values{"host": {sockDir}, "port": {strconv.Itoa(p.port)}, "sslmode": {"disable"}}.Encode(),
	}
	return u.String()
}

func (p *Postgres) ensureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgembed: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("pgembed: look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P04" {
		err = nil // created concurrently: fine
	}
	if err != nil {
		return fmt.Errorf("pgembed: create database %s: %w", name, err)
	}
	return nil
}

// stop shuts the current run down. p.mu must be held.
func (p *Postgres) stop() error {
	r := p.run
	if r == nil {
		return nil
	}
	pid := r.cmd.Process.Pid
	if err := signalFastShutdown(pid); err != nil && !r.hasExited() {
		return fmt.Errorf("pgembed: stop postgres: %w", err)
	}
	select {
	case <-r.exited:
	case <-time.After(stopTimeout):
		// A fast shutdown that hangs (e.g. a stuck checkpoint) is not worth
		// waiting for in dev/test; immediate shutdown leaves crash recovery
		// to the next start, and the postmaster SIGKILLs children that
		// ignore it.
		if err := signalImmediateShutdown(pid); err != nil && !r.hasExited() {
			return fmt.Errorf("pgembed: stop postgres: %w", err)
		}
		<-r.exited
	}
	p.cleanupRun()
	return nil
}

// cleanupRun releases what the current, exited run held. p.mu must be held.
func (p *Postgres) cleanupRun() {
	r := p.run
	p.run = nil
	r.closeLog()
	os.RemoveAll(r.sockDir)
}

func (r *run) hasExited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// removeStalePIDFile deletes postmaster.pid left by a server that is no
// longer running. A live PID is left alone so that postgres itself refuses
// to start a second server on the same data.
func (p *Postgres) removeStalePIDFile() error {
	path := filepath.Join(p.dataDir, "postmaster.pid")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err == nil && pid > 0 && processAlive(pid) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pgembed: remove stale %s: %w", path, err)
	}
	return nil
}

// makeSocketDir creates a private directory for the unix socket under /tmp,
// whose short path keeps the socket within the ~104-byte sun_path limit
// that a deep DataDir could exceed.
func (p *Postgres) makeSocketDir() (string, error) {
	base := "/tmp"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "pgembed-")
	if err != nil {
		return "", fmt.Errorf("pgembed: socket directory: %w", err)
	}
	if p.owner != nil {
		if err := p.owner.chown(dir); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("pgembed: socket directory: %w", err)
		}
	}
	return dir, nil
}

// openLog returns where server output goes for one run, and how to release
// it.
func (p *Postgres) openLog() (io.Writer, func(), error) {
	if p.log != nil {
		return p.log, func() {}, nil
	}
	f, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("pgembed: open log: %w", err)
	}
	return f, func() { f.Close() }, nil
}

func (p *Postgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(p.binDir, name), args...)
	// The caller's working directory may not be accessible to the server's
	// account, and postgres resolves nothing relative to it.
	cmd.Dir = "/"
	if p.owner != nil {
		p.owner.apply(cmd)
	}
	return cmd
}

// freePort asks the kernel for an unused port. Another process may take it
// before postgres binds it; Start retries in that case.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type portInUseError struct {
	port int
	log  string
}

func (e *portInUseError) Error() string {
	return fmt.Sprintf("pgembed: port %d is in use\n%s", e.port, e.log)
}

// tailBuffer keeps the last output of a server process so that errors can
// show why it failed.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 16 << 10

func newTailBuffer() *tailBuffer { return &tailBuffer{} }

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Lines returns at most the last n lines, indented for embedding in an error.
func (t *tailBuffer) Lines(n int) string {
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\t" + strings.Join(lines, "\n\t")
}
