// Package googleprovider serves the calendar capability with Google
// Calendar, through Google's Go client (google.golang.org/api/calendar/v3)
// and a service account. A booking is an event whose id oncecall chooses,
// derived from the step's key (EventID): Google refuses a second event with
// that id (409), so the id is the create's retry-safety, and the event is
// found again by it (events.get) when an answer was lost. Google does not
// promise to detect every id collision at create time, so a re-send never
// comes before a lookup. A move patches the event under the etag oncecall
// read (If-Match), so an edit made in the calendar meanwhile is detected,
// not overwritten (docs/providers/google-calendar.md).
package googleprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	gcal "google.golang.org/api/calendar/v3"
	"google.golang.org/api/option"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// Scope is the OAuth scope the service account is granted.
const Scope = gcal.CalendarScope

// Defaults.
const (
	DefaultTimeout = 10 * time.Second
	// DefaultVisibilityDelay: events.get reads an event by id; a few
	// seconds of margin cover Google's replication before "not found"
	// counts.
	DefaultVisibilityDelay = 5 * time.Second
)

// Config configures the adapter.
type Config struct {
	// CredentialsJSON is the service account's key file (JSON), or
	// CredentialsFile its path; one is required unless HTTPClient is set.
	CredentialsJSON []byte
	CredentialsFile string
	// Subject, when set, is the Workspace user the service account acts as
	// (domain-wide delegation); unset, the calendars must be shared with
	// the service account itself.
	Subject string
	// BaseURL overrides Google's endpoint (https://www.googleapis.com/calendar/v3/),
	// e.g. for the simulator.
	BaseURL string
	// HTTPClient, when set, is used as it is (it must authenticate); the
	// credentials are then not read.
	HTTPClient *http.Client
	// Timeout bounds each call. Default 10s.
	Timeout time.Duration
	// VisibilityDelay is how long after a write a read may still miss it.
	// Default 5s.
	VisibilityDelay time.Duration
}

// Calendar is the Google Calendar adapter.
type Calendar struct {
	svc    *gcal.Service
	traits provider.Traits
}

var _ calendar.Calendar = (*Calendar)(nil)

// New returns the adapter.
func New(ctx context.Context, cfg Config) (*Calendar, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.VisibilityDelay <= 0 {
		cfg.VisibilityDelay = DefaultVisibilityDelay
	}
	client := cfg.HTTPClient
	if client == nil {
		var err error
		if client, err = serviceAccount(cfg); err != nil {
			return nil, err
		}
	}
	opts := []option.ClientOption{option.WithHTTPClient(client)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithEndpoint(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	svc, err := gcal.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("google calendar client: %w", err)
	}
	return &Calendar{svc: svc, traits: provider.Traits{
		HonoursKeys: false, VisibilityDelay: cfg.VisibilityDelay, AuthoritativeLookup: true, Timeout: cfg.Timeout,
	}}, nil
}

// serviceAccount is an HTTP client authenticated as the service account
// (JWT grant at the key file's token_uri), for Subject when set.
func serviceAccount(cfg Config) (*http.Client, error) {
	key := cfg.CredentialsJSON
	if len(key) == 0 && cfg.CredentialsFile != "" {
		var err error
		if key, err = os.ReadFile(cfg.CredentialsFile); err != nil {
			return nil, fmt.Errorf("read the Google service account key: %w", err)
		}
	}
	if len(key) == 0 {
		return nil, errors.New("google calendar needs a service account key (JSON) or its file")
	}
	jwt, err := google.JWTConfigFromJSON(key, Scope)
	if err != nil {
		return nil, fmt.Errorf("the Google service account key cannot be read: %w", err)
	}
	jwt.Subject = cfg.Subject
	base := &http.Client{Timeout: cfg.Timeout}
	ts := jwt.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, base))
	return &http.Client{
		Timeout:   cfg.Timeout,
		Transport: &oauth2.Transport{Source: calendar.Tokens(oauth2.ReuseTokenSource(nil, ts)), Base: telemetry.Transport(nil)},
	}, nil
}

// Traits: no key re-send (a lookup first), authoritative reads by id.
func (c *Calendar) Traits() provider.Traits { return c.traits }
