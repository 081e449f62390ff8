// Package httpprovider is the client of oncecall's provider protocol
// (docs/provider-protocol.md): a write with an Idempotency-Key, a lookup by
// that key and a lookup by external business reference, against any server
// that speaks it (cmd/providersim, or an adapter in front of a real
// calendar, payment, messaging or CRM API).
//
// Every error it returns is classified as Rejected, NotSent or Ambiguous, so
// the caller can tell "definitely not done" from "safe to send again" from
// "may have happened". The client never resends on its own: net/http's
// transparent retry of requests carrying an Idempotency-Key is switched off,
// because against a provider that ignores keys a silent resend is a
// duplicate, and because it would hide a lost answer from the caller.
package httpprovider

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds a call when Client.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// maxAnswer bounds the answers the client reads.
const maxAnswer = 4 << 20

// Client calls one provider base URL.
type Client struct {
	// BaseURL is the provider's base URL, e.g. "http://127.0.0.1:8090".
	BaseURL string
	// Token, when set, is sent as "Authorization: Bearer <Token>".
	Token string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
	// Timeout bounds each call, connection and answer included. Default
	// DefaultTimeout. A write that times out after it was sent is Ambiguous.
	Timeout time.Duration
}

// Record is a write as the provider stored it.
type Record struct {
	// ID is the provider reference.
	ID          string          `json:"id"`
	Capability  string          `json:"capability"`
	Key         string          `json:"idempotency_key,omitempty"`
	ExternalRef string          `json:"external_ref"`
	Operation   string          `json:"operation"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	// Status is "committed", "rejected", or "pending" (version 2: accepted,
	// decided later).
	Status string `json:"status"`
	// Code and Message explain a rejection.
	Code      string    `json:"code,omitempty"`
	Message   string    `json:"message,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Data is what the write gave back (version 2: a calendar write's
	// event_id, calendar_id, start, end, status).
	Data map[string]string `json:"data,omitempty"`
	// Replayed is set when the provider answered a write from its key
	// memory (header Idempotent-Replayed: true) instead of performing it.
	Replayed bool `json:"-"`
}

// CodeKeyReused is the problem code of a write whose key holds another
// write at the provider.
const CodeKeyReused = "IDEMPOTENCY_KEY_REUSED"

// Statuses of a record.
const (
	StatusCommitted = "committed"
	StatusRejected  = "rejected"
	StatusPending   = "pending"
)

// ProtocolVersion is the version of the protocol the client speaks, sent
// as the Oncecall-Protocol-Version header of every request.
const ProtocolVersion = "2"

// Write performs a write on capability with the provider key (empty only
// for providers that do not take keys). externalRef is the unique business
// reference lookups can find it by. A committed write returns its record; a
// business rejection returns *Rejected; a write the provider accepted and
// decides later returns its record and *Pending; anything else is *NotSent
// or *Ambiguous.
func (c *Client) Write(ctx context.Context, capability, key, externalRef, operation string, payload any) (Record, error) {
	if payload == nil {
		payload = struct{}{}
	}
	body, err := json.Marshal(struct {
		ExternalRef string `json:"external_ref"`
		Operation   string `json:"operation"`
		Payload     any    `json:"payload"`
	}{externalRef, operation, payload})
	if err != nil {
		return Record{}, &NotSent{Err: fmt.Errorf("encode payload: %w", err)}
	}
	header := http.Header{"Content-Type": {"application/json"}}
	if key != "" {
		header.Set("Idempotency-Key", key)
	}
	a, err := c.do(ctx, http.MethodPost, "/"+segment(capability)+"/writes", header, body)
	if err != nil {
		return Record{}, err
	}
	switch {
	case a.status == http.StatusOK || a.status == http.StatusCreated || a.status == http.StatusAccepted:
		rec, err := a.record()
		if err != nil {
			return Record{}, err
		}
		if err := rec.answers(key, externalRef); err != nil {
			return Record{}, &Ambiguous{Status: a.status, Err: err}
		}
		switch rec.Status {
		case StatusRejected:
			return Record{}, &Rejected{Status: a.status, Code: rec.Code, Message: rec.Message, ID: rec.ID}
		case StatusPending:
			return rec, &Pending{ID: rec.ID}
		}
		return rec, nil
	case a.status == http.StatusUnprocessableEntity:
		var p Record
		_ = json.Unmarshal(a.body, &p)
		return Record{}, &Rejected{Status: a.status, Code: orStatus(p.Code, a.status), Message: p.Message, ID: p.ID}
	case a.status == http.StatusBadRequest && a.code() == CodeKeyReused:
		// The key holds another write: something was written under it.
		return Record{}, &Ambiguous{Status: a.status, Code: a.code()}
	case a.status == http.StatusBadRequest || a.status == http.StatusRequestEntityTooLarge:
		return Record{}, &Rejected{Status: a.status, Code: orStatus(a.code(), a.status), Message: a.message()}
	}
	return Record{}, a.failure()
}

// LookupByKey asks the provider for the write stored under key. found is
// false only when the provider answered 404 with code NOT_FOUND: "not found"
// is evidence only after the provider's visibility delay and inside its key
// retention, which the caller must check. Errors are *NotSent or *Ambiguous;
// both mean the lookup was inconclusive.
func (c *Client) LookupByKey(ctx context.Context, capability, key string) (Record, bool, error) {
	a, err := c.do(ctx, http.MethodGet, "/"+segment(capability)+"/writes/by-key/"+segment(key), nil, nil)
	if err != nil {
		return Record{}, false, err
	}
	switch {
	case a.status == http.StatusOK:
		rec, err := a.record()
		if err != nil {
			return Record{}, false, err
		}
		if rec.Key != key {
			return Record{}, false, &Ambiguous{Status: a.status, Err: fmt.Errorf("lookup by key answered a write under another key")}
		}
		return rec, true, nil
	case a.status == http.StatusNotFound && a.code() == "NOT_FOUND":
		return Record{}, false, nil
	}
	return Record{}, false, a.lookupFailure()
}

// LookupByRef lists the writes the provider holds for an external
// reference (committed and rejected; more than one if a provider without
// idempotency support performed duplicates). An empty list is evidence only
// after the provider's visibility delay. Errors are *NotSent or *Ambiguous.
func (c *Client) LookupByRef(ctx context.Context, capability, ref string) ([]Record, error) {
	a, err := c.do(ctx, http.MethodGet, "/"+segment(capability)+"/writes?external_ref="+url.QueryEscape(ref), nil, nil)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, a.lookupFailure()
	}
	var l struct {
		Writes *[]Record `json:"writes"`
	}
	if err := json.Unmarshal(a.body, &l); err != nil || l.Writes == nil {
		return nil, &Ambiguous{Status: a.status, Err: fmt.Errorf("unreadable lookup answer: %v", err)}
	}
	for _, r := range *l.Writes {
		if r.ID == "" || r.ExternalRef != ref {
			return nil, &Ambiguous{Status: a.status, Err: fmt.Errorf("lookup answer holds a write without id or for another reference")}
		}
	}
	return *l.Writes, nil
}

// answer is a complete HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) problem() (p struct{ Code, Message string }) {
	_ = json.Unmarshal(a.body, &p)
	return p
}

func (a answer) code() string    { return a.problem().Code }
func (a answer) message() string { return a.problem().Message }

// record decodes a record answer; one without an id or a known status is
// unreadable, so the write's outcome is unknown.
func (a answer) record() (Record, error) {
	var rec Record
	if err := json.Unmarshal(a.body, &rec); err != nil {
		return Record{}, &Ambiguous{Status: a.status, Err: fmt.Errorf("unreadable answer: %w", err)}
	}
	if rec.ID == "" || (rec.Status != StatusCommitted && rec.Status != StatusRejected && rec.Status != StatusPending) {
		return Record{}, &Ambiguous{Status: a.status, Err: fmt.Errorf("answer without id or known status")}
	}
	rec.Replayed = strings.EqualFold(a.header.Get("Idempotent-Replayed"), "true")
	return rec, nil
}

// answers checks that a write's answer is about the write that was sent: a
// record for another reference or key (a misrouted or caching proxy) is no
// evidence of anything.
func (r Record) answers(key, externalRef string) error {
	if r.ExternalRef != externalRef || (key != "" && r.Key != "" && r.Key != key) {
		return fmt.Errorf("the answer describes another write (external_ref or key differ)")
	}
	return nil
}

// failure classifies an answer that is neither success nor rejection.
func (a answer) failure() error {
	switch a.status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusTooManyRequests:
		return &NotSent{Status: a.status, Code: orStatus(a.code(), a.status)}
	}
	return &Ambiguous{Status: a.status, Code: orStatus(a.code(), a.status)}
}

// lookupFailure classifies a failed lookup: never a rejection.
func (a answer) lookupFailure() error {
	err := a.failure()
	if _, ok := err.(*NotSent); ok {
		return err
	}
	return &Ambiguous{Status: a.status, Code: orStatus(a.code(), a.status)}
}

func orStatus(code string, status int) string {
	if code != "" {
		return code
	}
	return fmt.Sprintf("HTTP_%d", status)
}

// segment escapes one path segment; dots too, so "." and ".." keys are not
// taken for dot segments by the server or a proxy.
func segment(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), ".", "%2E")
}

// sendTrace records how far a request got.
type sendTrace struct {
	getConn      atomic.Bool // the transport traces and looked for a connection
	wroteHeaders atomic.Bool // request bytes may have reached the connection
}

// do sends one request and reads the whole answer within the timeout.
func (c *Client) do(ctx context.Context, method, path string, header http.Header, body []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.Timeout, DefaultTimeout))
	defer cancel()
	tr := &sendTrace{}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:      func(string) { tr.getConn.Store(true) },
		WroteHeaders: func() { tr.wroteHeaders.Store(true) },
	})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return answer{}, &NotSent{Err: err}
	}
	// Without GetBody net/http cannot resend the request by itself.
	req.GetBody = nil
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Oncecall-Protocol-Version", ProtocolVersion)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return answer{}, transportError(err, tr)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return answer{}, &Ambiguous{Status: resp.StatusCode, Err: fmt.Errorf("read answer: %w", err)}
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}
