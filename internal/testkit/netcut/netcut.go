// Package netcut is a TCP proxy for tests that sits between a PostgreSQL
// client (oncecall's pool) and the server and breaks the connection at the
// moment that matters for an idempotency store: the client's COMMIT, or
// another statement a test names. It reads the frontend protocol (simple
// queries, and Parse/Bind of the extended protocol, so a statement sent as a
// cached prepared statement is seen too) and, when armed, cuts the
// connection just before the statement reaches the server (a COMMIT then
// certainly did not happen), just after it (the COMMIT happened but the
// client never hears so), or stalls it (a network partition: the
// transaction stays open on the server). Only tests use it.
package netcut

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mode is what an armed proxy does at the statement it waits for.
type Mode int

const (
	// Before drops the client's messages that carry the statement (and
	// those written with it) and closes both sides: at a COMMIT, the server
	// rolls the transaction back.
	Before Mode = iota + 1
	// After forwards the statement, waits for the server's answer, drops it
	// and closes both sides: a COMMIT is committed, and the client sees its
	// connection break.
	After
	// Stall forwards nothing more in either direction on that connection
	// and keeps both sides open, like a network partition: the server holds
	// the open transaction until something ends it.
	Stall
)

func (m Mode) String() string {
	switch m {
	case Before:
		return "before"
	case After:
		return "after"
	case Stall:
		return "stall"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// answerWait bounds how long After waits for the server's answer
// before it cuts anyway.
const answerWait = 10 * time.Second

// Proxy forwards connections from its address to a PostgreSQL server.
type Proxy struct {
	t      testing.TB
	target string
	ln     net.Listener
	// URL is the database URL with the proxy as its host.
	URL string

	mu    sync.Mutex
	armed Mode
	match func(sql string) bool // the statement armed waits for
	fired chan struct{}         // closed when the armed mode has acted
	conns map[*conn]struct{}
	wg    sync.WaitGroup
}

// Start listens on a free local port and forwards to the host and port of
// databaseURL (a postgres:// URL over TCP without TLS: the proxy must read
// the protocol). It closes at cleanup.
func Start(t testing.TB, databaseURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil || u.Host == "" {
		t.Fatalf("netcut: %q is not a postgres URL with a host", databaseURL)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("netcut: listen: %v", err)
	}
	q := u.Query()
	q.Set("sslmode", "disable")
	target := u.Host
	u.Host, u.RawQuery = ln.Addr().String(), q.Encode()
	p := &Proxy{t: t, target: target, ln: ln, URL: u.String(), conns: map[*conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Arm makes the next COMMIT on any connection act as mode says. The channel
// is closed once it has: after the cut for Before and After, when the
// connection stalls for Stall.
func (p *Proxy) Arm(mode Mode) <-chan struct{} { return p.ArmAt(mode, IsCommit) }

// ArmAt is Arm at the next statement whose SQL match accepts.
func (p *Proxy) ArmAt(mode Mode, match func(sql string) bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.match, p.fired = mode, match, make(chan struct{})
	return p.fired
}

// take disarms the proxy if sqls hold the statement it waits for, and
// returns the mode and the channel to close when it has acted; zero when it
// does not act.
func (p *Proxy) take(sqls []string) (Mode, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed == 0 || !slices.ContainsFunc(sqls, p.match) {
		return 0, nil
	}
	m, f := p.armed, p.fired
	p.armed, p.match, p.fired = 0, nil, nil
	return m, f
}

// CutAll closes every open connection, stalled ones included.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	conns := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.cut()
	}
}

// Close stops accepting, cuts every connection and waits for them to end.
func (p *Proxy) Close() {
	p.ln.Close()
	p.CutAll()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		c := &conn{p: p, client: client, server: server, stmts: map[string]string{},
			answered: make(chan struct{}), done: make(chan struct{})}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go c.clientToServer()
		go c.serverToClient()
	}
}

// conn is one proxied connection.
type conn struct {
	p              *Proxy
	client, server net.Conn
	// stmts maps this connection's prepared statement names to their SQL,
	// so a Bind of a cached COMMIT is recognised.
	stmts map[string]string

	mu        sync.Mutex
	swallow   bool          // After: drop the server's next answer and cut
	answered  chan struct{} // closed when that answer arrived
	stalled   bool
	done      chan struct{} // closed by cut
	cutOnce   sync.Once
	closeOnce sync.Once
}

func (c *conn) cut() {
	c.cutOnce.Do(func() {
		close(c.done)
		c.client.Close()
		c.server.Close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
}

func (c *conn) isStalled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stalled
}

// clientToServer forwards the client's messages in the batches the client
// wrote them (what one read made available), looking for the armed
// statement.
func (c *conn) clientToServer() {
	defer c.p.wg.Done()
	defer c.cut()
	r := bufio.NewReaderSize(c.client, 64<<10)
	startup := true
	var batch []byte
	var sqls []string // the statements the batch runs
	for {
		msg, err := readMessage(r, startup)
		if err != nil {
			return
		}
		if startup {
			// SSLRequest and GSSENCRequest are followed by the real startup
			// message; anything else ends the startup phase.
			code := binary.BigEndian.Uint32(msg[4:8])
			startup = code == 80877103 || code == 80877104
		} else if sql, ok := c.statement(msg); ok {
			sqls = append(sqls, sql)
		}
		batch = append(batch, msg...)
		if r.Buffered() > 0 {
			continue // more of the same write: forward it together
		}
		if c.isStalled() {
			batch, sqls = batch[:0], sqls[:0] // partitioned: nothing passes
			continue
		}
		mode, fired := c.p.take(sqls)
		switch mode {
		case Before:
			c.cut()
			close(fired)
			return
		case Stall:
			c.mu.Lock()
			c.stalled = true
			c.mu.Unlock()
			close(fired)
			batch, sqls = batch[:0], sqls[:0]
			continue
		case After:
			c.mu.Lock()
			c.swallow = true
			c.mu.Unlock()
			go func() {
				select {
				case <-c.answered:
				case <-time.After(answerWait):
				}
				c.cut()
				close(fired)
			}()
		}
		if _, err := c.server.Write(batch); err != nil {
			return
		}
		batch, sqls = batch[:0], sqls[:0]
	}
}

// serverToClient relays the server's answers, except the one an After cut
// swallows and anything after a stall.
func (c *conn) serverToClient() {
	defer c.p.wg.Done()
	defer c.cut()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			c.mu.Lock()
			swallow, stalled := c.swallow, c.stalled
			c.mu.Unlock()
			switch {
			case swallow:
				c.closeOnce.Do(func() { close(c.answered) })
				return
			case stalled:
				continue
			}
			if _, err := c.client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			if c.isStalled() && !errors.Is(err, net.ErrClosed) {
				// The server ended a partitioned session (say, its idle
				// timeout): the client must not hear of it either.
				<-c.done
			}
			return
		}
	}
}

// statement returns the SQL a frontend message runs: a simple Query, or a
// Bind of a statement the connection prepared (a Parse only prepares it).
func (c *conn) statement(msg []byte) (string, bool) {
	body := msg[5:]
	switch msg[0] {
	case 'Q':
		sql, _ := cstring(body)
		return sql, true
	case 'P':
		name, rest := cstring(body)
		sql, _ := cstring(rest)
		c.stmts[name] = sql
	case 'B':
		_, rest := cstring(body) // portal
		name, _ := cstring(rest)
		return c.stmts[name], true
	}
	return "", false
}

// IsCommit reports whether sql is a COMMIT (or its synonym END).
func IsCommit(sql string) bool {
	s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql), ";"))
	return strings.EqualFold(s, "commit") || strings.EqualFold(s, "end")
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := 0
	for i < len(b) && b[i] != 0 {
		i++
	}
	if i == len(b) {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

// readMessage reads one frontend message with its header: during startup a
// length and a body, afterwards a type byte, a length and a body.
func readMessage(r *bufio.Reader, startup bool) ([]byte, error) {
	head := 5
	if startup {
		head = 4
	}
	msg := make([]byte, head)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(msg[head-4:]))
	if n < 4 || n > 1<<30 {
		return nil, fmt.Errorf("netcut: message length %d", n)
	}
	msg = append(msg, make([]byte, n-4)...)
	if _, err := io.ReadFull(r, msg[head:]); err != nil {
		return nil, err
	}
	if startup && len(msg) < 8 {
		return nil, errors.New("netcut: short startup message")
	}
	return msg, nil
}
