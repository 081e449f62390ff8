// Package microsoftprovider serves the calendar capability with Microsoft
// 365 calendars, through Microsoft Graph's REST API (v1.0) with an app's
// client credentials (golang.org/x/oauth2/clientcredentials); the Graph SDK
// is not used. A booking is created with transactionId set to the step's
// key, Graph's own guard against a create repeated by a client retry, and
// with the key in a single-value extended property, by which an event
// whose answer was lost is found again ($filter). Graph documents no
// retention for transactionId, so recovery looks the event up before it
// sends again. A move updates the event under the @odata.etag oncecall
// read (If-Match), so an edit made in Outlook meanwhile is detected, not
// overwritten (docs/providers/microsoft-365.md).
package microsoftprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// Defaults.
const (
	DefaultBaseURL      = "https://graph.microsoft.com/v1.0"
	DefaultAuthorityURL = "https://login.microsoftonline.com"
	// Scope asks for the app's granted application permissions.
	Scope          = "https://graph.microsoft.com/.default"
	DefaultTimeout = 10 * time.Second
	// DefaultVisibilityDelay covers the time Exchange may take before a
	// new event answers a $filter.
	DefaultVisibilityDelay = 30 * time.Second
)

// PropertySet is the GUID of oncecall's extended properties: each mark is
// "String {PropertySet} Name <mark>".
const PropertySet = "{6b1f0c2e-7d4a-4e8b-9c35-0a2f5e6d7c81}"

// CalendarNotFound: the practitioner's mailbox does not exist, or the app
// may not read its calendar.
const CalendarNotFound = "CALENDAR_NOT_FOUND"

// Config configures the adapter.
type Config struct {
	// TenantID, ClientID and ClientSecret are the Entra ID app's (its
	// directory, application id and a client secret).
	TenantID, ClientID, ClientSecret string
	// BaseURL overrides Graph's (https://graph.microsoft.com/v1.0) and
	// AuthorityURL the token issuer's (https://login.microsoftonline.com),
	// e.g. for the simulator.
	BaseURL, AuthorityURL string
	// HTTPClient, when set, is used as it is (it must authenticate).
	HTTPClient *http.Client
	// Timeout bounds each call. Default 10s.
	Timeout time.Duration
	// VisibilityDelay is how long after a write a lookup may miss it.
	// Default 30s.
	VisibilityDelay time.Duration
}

// Calendar is the Microsoft 365 adapter.
type Calendar struct {
	http   *http.Client
	base   string
	traits provider.Traits
}

var _ calendar.Calendar = (*Calendar)(nil)

// New returns the adapter.
func New(cfg Config) (*Calendar, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.VisibilityDelay <= 0 {
		cfg.VisibilityDelay = DefaultVisibilityDelay
	}
	client := cfg.HTTPClient
	if client == nil {
		if cfg.TenantID == "" || cfg.ClientID == "" || cfg.ClientSecret == "" {
			return nil, errors.New("microsoft 365 needs the app's tenant id, client id and client secret")
		}
		cc := clientcredentials.Config{
			ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Scopes: []string{Scope},
			TokenURL: strings.TrimRight(cmpOr(cfg.AuthorityURL, DefaultAuthorityURL), "/") + "/" + url.PathEscape(cfg.TenantID) + "/oauth2/v2.0/token",
		}
		base := &http.Client{Timeout: cfg.Timeout}
		ts := cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, base))
		client = &http.Client{Timeout: cfg.Timeout, Transport: &oauth2.Transport{Source: calendar.Tokens(ts), Base: telemetry.Transport(nil)}}
	}
	return &Calendar{
		http: client, base: strings.TrimRight(cmpOr(cfg.BaseURL, DefaultBaseURL), "/"),
		traits: provider.Traits{HonoursKeys: false, VisibilityDelay: cfg.VisibilityDelay, AuthoritativeLookup: true, Timeout: cfg.Timeout},
	}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Traits: no key re-send (a lookup first), authoritative lookups past the
// visibility delay.
func (c *Calendar) Traits() provider.Traits { return c.traits }

// graphError is Graph's error answer.
type graphError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *graphError) Error() string { return fmt.Sprintf("graph answered %d %s", e.Status, e.Code) }

// call sends one request and decodes a 2xx answer into out. A non-2xx
// answer is a *graphError; a failure without an answer is classified by
// calendar.Transport.
func (c *Calendar) call(ctx context.Context, method, u string, header http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Prefer", `outlook.timezone="UTC"`)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := c.http.Do(req)
	if err != nil {
		return calendar.Transport(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%w: read graph's answer: %w", provider.ErrAmbiguous, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var e struct{ Error graphError }
		_ = json.Unmarshal(raw, &e)
		e.Error.Status = res.StatusCode
		return &e.Error
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: graph's answer cannot be read: %w", provider.ErrAmbiguous, err)
	}
	return nil
}

func (c *Calendar) user(calendarID string) string {
	return c.base + "/users/" + url.PathEscape(calendarID)
}

func (c *Calendar) eventURL(calendarID, id string) string {
	return c.user(calendarID) + "/events/" + url.PathEscape(id)
}

// status is the HTTP status of Graph's error answer, 0 for anything else.
func status(err error) int {
	if ge, ok := errors.AsType[*graphError](err); ok {
		return ge.Status
	}
	return 0
}

// classify maps an error of a write: Graph's refusal of the request itself
// (400, 404) is a rejection; a refusal before acting (401, 403, 429) was
// not sent; anything else (5xx, 408, 409, 412, a timeout, a lost
// connection) is ambiguous.
func classify(err error, what, notFound string) error {
	ge, ok := errors.AsType[*graphError](err)
	if !ok {
		return err
	}
	code := "GRAPH_" + strings.ToUpper(cmpOr(ge.Code, "REFUSED"))
	if ge.Status == http.StatusNotFound {
		code = notFound
	}
	if ge.Status == http.StatusConflict || ge.Status == http.StatusPreconditionFailed {
		return fmt.Errorf("%w: %s: graph answered %d %s", provider.ErrAmbiguous, what, ge.Status, ge.Code)
	}
	return calendar.Status(ge.Status, "graph ("+what+", "+ge.Code+")", &provider.Rejected{Code: code, Message: what + ": graph refused it (" + ge.Code + ")"})
}
