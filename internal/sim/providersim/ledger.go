package providersim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Write is one write the simulator stored: committed, or rejected for a
// business reason (a rejection is stored under its key and replayed).
type Write struct {
	// ID is the provider reference, e.g. "cal_0192...".
	ID          string `json:"id"`
	Capability  string `json:"capability"`
	Key         string `json:"idempotency_key,omitempty"`
	ExternalRef string `json:"external_ref"`
	Operation   string `json:"operation"`
	// Payload is the request's payload as received (compacted).
	Payload json.RawMessage `json:"payload"`
	// Status is "committed" or "rejected", or "pending" for a write
	// accepted and decided later (DecidedAt; the pending fault).
	Status    string    `json:"status"`
	Code      string    `json:"code,omitempty"`
	Message   string    `json:"message,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// VisibleAt is when lookups start to see the write (CreatedAt plus the
	// lookup lag in effect when it was written).
	VisibleAt time.Time `json:"visible_at"`
	// DecidedAt is when a pending write is committed.
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Data is what the write gives back (a calendar write's event).
	Data map[string]string `json:"data,omitempty"`
}

// Statuses of a stored write.
const (
	StatusCommitted = "committed"
	StatusRejected  = "rejected"
	StatusPending   = "pending"
)

// at is the write as it stands at now: a pending write whose decision time
// has come is committed.
func (w Write) at(now time.Time) Write {
	if w.Status == StatusPending && !now.Before(w.DecidedAt) {
		w.Status = StatusCommitted
	}
	return w
}

// event is one line of the ledger file. A "write" stores a write (and counts
// as one request on its key); a "hit" counts a further write request on a key
// that created nothing (a replay, an in-flight conflict, a failure before
// commit).
type event struct {
	Event      string    `json:"event"`
	Write      *Write    `json:"write,omitempty"`
	Capability string    `json:"capability,omitempty"`
	Key        string    `json:"key,omitempty"`
	At         time.Time `json:"at,omitzero"`
}

// ledgerFile is the append-only JSON-lines file that makes the simulator
// durable: every event is written and fsynced before it takes effect, and
// replayed at start.
type ledgerFile struct {
	f    *os.File
	size int64
}

// openLedger opens (creating) the ledger at path, locks it against a second
// simulator, and returns its events. A torn last line, left by a crash in
// the middle of an append, is cut off; damage anywhere else is an error.
func openLedger(path string) (*ledgerFile, []event, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open ledger: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("lock ledger %s (is another providersim using it?): %w", path, err)
	}
	events, good, err := readEvents(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read ledger %s: %w", path, err)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("trim ledger: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &ledgerFile{f: f, size: good}, events, nil
}

// readEvents decodes every complete line and returns the offset after the
// last good one.
func readEvents(r io.Reader) ([]event, int64, error) {
	br := bufio.NewReader(r)
	var events []event
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A line without its newline is an append the crash cut short.
			return events, off, nil
		}
		if err != nil {
			return nil, 0, err
		}
		var ev event
		if uerr := json.Unmarshal(bytes.TrimSpace(line), &ev); uerr != nil || !ev.valid() {
			if _, perr := br.Peek(1); errors.Is(perr, io.EOF) {
				return events, off, nil // torn last line
			}
			return nil, 0, fmt.Errorf("line %d is damaged", n)
		}
		events = append(events, ev)
		off += int64(len(line))
	}
}

func (ev event) valid() bool {
	switch ev.Event {
	case "write":
		return ev.Write != nil && ev.Write.ID != "" && isCapability(ev.Write.Capability)
	case "hit":
		return isCapability(ev.Capability) && ev.Key != ""
	}
	return false
}

// append writes one event and fsyncs it. On failure the file is cut back so
// the next append starts on a clean line.
func (l *ledgerFile) append(ev event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := l.f.Write(b); err != nil {
		l.rewind()
		return fmt.Errorf("append to ledger: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		l.rewind()
		return fmt.Errorf("sync ledger: %w", err)
	}
	l.size += int64(len(b))
	return nil
}

func (l *ledgerFile) rewind() {
	_ = l.f.Truncate(l.size)
	_, _ = l.f.Seek(l.size, io.SeekStart)
}

func (l *ledgerFile) close() error { return l.f.Close() }
