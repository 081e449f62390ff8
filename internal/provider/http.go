package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/provider/httpprovider"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// HTTPConfig configures a provider reached over the documented JSON
// protocol (docs/provider-protocol.md).
type HTTPConfig struct {
	BaseURL string
	// Token is sent as "Authorization: Bearer <Token>" when set.
	Token string
	// Timeout bounds each call. Default 5s.
	Timeout time.Duration
	// Traits are what this provider promises; they are configuration, not
	// discovered, because recovery must not trust a provider's word at run
	// time about how it deduplicates.
	Traits Traits
}

// httpProvider adapts the protocol client to Provider.
type httpProvider struct {
	c      *httpprovider.Client
	traits Traits
	id     Identity
}

// NewHTTP returns a Provider speaking the JSON protocol.
func NewHTTP(cfg HTTPConfig) Provider {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	cfg.Traits.Timeout = cfg.Timeout
	return &httpProvider{
		c: &httpprovider.Client{BaseURL: cfg.BaseURL, Token: cfg.Token, Timeout: cfg.Timeout,
			HTTP: &http.Client{Transport: telemetry.Transport(nil)}},
		traits: cfg.Traits,
		id:     Identity{Kind: "http", Account: baseIdentity(cfg.BaseURL)},
	}
}

func (p *httpProvider) Traits() Traits { return p.traits }

// Identity: "http" at its base URL.
func (p *httpProvider) Identity() Identity { return p.id }

// baseIdentity is a base URL without what may be secret or varies between
// spellings of the same provider: credentials, query, fragment, a final
// slash; the scheme and host in lower case.
func baseIdentity(base string) string {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
}

func (p *httpProvider) Write(ctx context.Context, w Write) (Record, error) {
	key := w.Key
	if !p.traits.HonoursKeys {
		key = "" // a provider without keys is found by external reference
	}
	rec, err := p.c.Write(ctx, w.Capability, key, w.ExternalRef, w.Operation, w.Payload)
	if err == nil {
		return record(rec), nil
	}
	switch httpprovider.ClassOf(err) {
	case httpprovider.ClassRejected:
		rej, _ := errors.AsType[*httpprovider.Rejected](err)
		return Record{}, &Rejected{Code: rej.Code, Message: rej.Message}
	case httpprovider.ClassNotSent:
		return Record{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	case httpprovider.ClassPending:
		// Accepted, decided later: checked again with backoff.
		return Record{}, fmt.Errorf("%w: %w", ErrWaiting, err)
	}
	if amb, ok := errors.AsType[*httpprovider.Ambiguous](err); ok && amb.Code == httpprovider.CodeKeyReused {
		return Record{}, fmt.Errorf("%w: %w", ErrKeyConflict, err)
	}
	return Record{}, fmt.Errorf("%w: %w", ErrAmbiguous, err)
}

// LookupByKey finds the write stored under key; one the provider has not
// decided yet (pending) is ErrWaiting.
func (p *httpProvider) LookupByKey(ctx context.Context, capability, key string) (Record, bool, error) {
	rec, found, err := p.c.LookupByKey(ctx, capability, key)
	if err == nil && found && rec.Status == httpprovider.StatusPending {
		return Record{}, false, fmt.Errorf("%w: write %s is pending at the provider", ErrWaiting, rec.ID)
	}
	return record(rec), found, err
}

// LookupByRef lists the writes with ref; while one is pending, the answer
// is ErrWaiting.
func (p *httpProvider) LookupByRef(ctx context.Context, capability, ref string) ([]Record, error) {
	recs, err := p.c.LookupByRef(ctx, capability, ref)
	out := make([]Record, len(recs))
	for i, r := range recs {
		if r.Status == httpprovider.StatusPending {
			return nil, fmt.Errorf("%w: write %s is pending at the provider", ErrWaiting, r.ID)
		}
		out[i] = record(r)
	}
	return out, err
}

func record(r httpprovider.Record) Record {
	return Record{ID: r.ID, ExternalRef: r.ExternalRef, Status: r.Status, Code: r.Code, Data: r.Data}
}
