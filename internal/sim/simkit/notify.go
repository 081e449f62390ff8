package simkit

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Notifier sends a fake's change notifications (Google's watch channels,
// Graph's subscriptions, Cal.com's webhooks) the way the services do: a
// POST after the change, not waited for by the request that made it. It
// keeps every delivery for GET /sim/notifications.
type Notifier struct {
	mu         sync.Mutex
	deliveries []Delivery
	wg         sync.WaitGroup
	// held, while set, keeps notifications back until Release: a
	// delivery late by as long as a test needs.
	held    bool
	waiting []func()
	// sending counts the notifications sent and not yet answered.
	sending int
}

// Delivery is one notification sent.
type Delivery struct {
	URL    string    `json:"url"`
	Kind   string    `json:"kind"`
	Status int       `json:"status"`
	Error  string    `json:"error,omitempty"`
	At     time.Time `json:"at"`
}

// notifyTimeout bounds one delivery, as the services bound theirs.
const notifyTimeout = 10 * time.Second

var notifyClient = &http.Client{Timeout: notifyTimeout}

// Post sends one notification now and returns the receiver's status and
// answer (Graph's validation request waits for it).
func (n *Notifier) Post(kind, url string, header http.Header, body []byte) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	d := Delivery{URL: url, Kind: kind, At: time.Now().UTC()}
	var answer []byte
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err == nil {
		req.Header = header.Clone()
		var res *http.Response
		if res, err = notifyClient.Do(req); err == nil {
			answer, _ = io.ReadAll(io.LimitReader(res.Body, 1<<16))
			res.Body.Close()
			d.Status = res.StatusCode
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
	n.mu.Lock()
	n.deliveries = append(n.deliveries, d)
	n.mu.Unlock()
	return d.Status, answer
}

// Send sends one notification in the background (or, while held, once
// released).
func (n *Notifier) Send(kind, url string, header http.Header, body []byte) {
	send := func() {
		n.mu.Lock()
		n.sending++
		n.mu.Unlock()
		n.wg.Go(func() {
			n.Post(kind, url, header, body)
			n.mu.Lock()
			n.sending--
			n.mu.Unlock()
		})
	}
	n.mu.Lock()
	if n.held {
		n.waiting = append(n.waiting, send)
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	send()
}

// Hold keeps the notifications made from now on back until Release.
func (n *Notifier) Hold() {
	n.mu.Lock()
	n.held = true
	n.mu.Unlock()
}

// Release sends the notifications held back and returns how many.
func (n *Notifier) Release() int {
	n.mu.Lock()
	waiting := n.waiting
	n.held, n.waiting = false, nil
	n.mu.Unlock()
	for _, send := range waiting {
		send()
	}
	return len(waiting)
}

// Deliveries lists the notifications sent so far, in the order they ended,
// and how many are on their way (sent, not answered yet).
func (n *Notifier) Deliveries() ([]Delivery, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Delivery(nil), n.deliveries...), n.sending
}
