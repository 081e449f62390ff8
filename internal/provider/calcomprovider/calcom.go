// Package calcomprovider serves the calendar capability with Cal.com,
// through its API v2 (REST, cal-api-version 2024-08-13 for bookings,
// 2024-09-04 for slots) and an API key. Cal.com takes no client key for a
// booking: it derives its own from the event type, the time and the host,
// so a booking sent again is refused with an error, never answered with
// the first one. oncecall therefore writes the step's key in the booking's
// metadata, and settles any refusal, and any lost answer, by looking the
// booking up (its event type around its time, matched by that key); the
// driver never sends again before such a lookup. A reschedule makes a new
// booking with a new uid, linked to the old one both ways: the step records
// the new uid and what it replaced (docs/providers/calcom.md).
package calcomprovider

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

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// API versions, sent as the cal-api-version header.
const (
	BookingsVersion = "2024-08-13"
	SlotsVersion    = "2024-09-04"
)

// Defaults.
const (
	DefaultBaseURL = "https://api.cal.com"
	DefaultTimeout = 10 * time.Second
	// DefaultVisibilityDelay covers the time a new booking may take to
	// appear in the bookings list.
	DefaultVisibilityDelay = 30 * time.Second
	// chainHops bounds how far a reschedule chain is followed.
	chainHops = 10
)

// Rejection codes of this adapter.
const (
	// CalendarNotFound: the event type does not exist or is not the key's.
	CalendarNotFound = "CALENDAR_NOT_FOUND"
	// NoContact: Cal.com books an attendee with an e-mail or a phone
	// number, and the customer has neither.
	NoContact = "CUSTOMER_HAS_NO_CONTACT"
	// Refused: Cal.com refused the booking for a reason other than the time.
	Refused = "CALCOM_REFUSED"
)

// Config configures the adapter.
type Config struct {
	// APIKey is the Cal.com API key (cal_live_... or cal_...).
	APIKey string
	// BaseURL overrides https://api.cal.com, e.g. for the simulator or a
	// self-hosted Cal.com.
	BaseURL string
	// Timeout bounds each call. Default 10s.
	Timeout time.Duration
	// VisibilityDelay is how long after a write a lookup may miss it.
	// Default 30s.
	VisibilityDelay time.Duration
}

// Calendar is the Cal.com adapter. A calendar id is an event type id.
type Calendar struct {
	http   *http.Client
	base   string
	key    string
	traits provider.Traits
}

var _ calendar.Calendar = (*Calendar)(nil)

// New returns the adapter.
func New(cfg Config) (*Calendar, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("cal.com needs an API key")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.VisibilityDelay <= 0 {
		cfg.VisibilityDelay = DefaultVisibilityDelay
	}
	base := DefaultBaseURL
	if cfg.BaseURL != "" {
		base = strings.TrimRight(cfg.BaseURL, "/")
	}
	return &Calendar{
		http: &http.Client{Timeout: cfg.Timeout, Transport: telemetry.Transport(nil)}, base: base, key: cfg.APIKey,
		traits: provider.Traits{HonoursKeys: false, VisibilityDelay: cfg.VisibilityDelay, AuthoritativeLookup: true, Timeout: cfg.Timeout},
	}, nil
}

// Traits: no client key; a lookup settles every ambiguity.
func (c *Calendar) Traits() provider.Traits { return c.traits }

// apiError is Cal.com's error answer.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("cal.com answered %d %s", e.Status, e.Code) }

func status(err error) int {
	if e, ok := errors.AsType[*apiError](err); ok {
		return e.Status
	}
	return 0
}

// call sends one request with the API key and version, and decodes the
// envelope's data of a 2xx answer into out.
func (c *Calendar) call(ctx context.Context, method, path, version string, query url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("cal-api-version", version)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return calendar.Transport(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%w: read cal.com's answer: %w", provider.ErrAmbiguous, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var e struct{ Error apiError }
		_ = json.Unmarshal(raw, &e)
		e.Error.Status = res.StatusCode
		return &e.Error
	}
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Status != "success" {
		return fmt.Errorf("%w: cal.com's answer cannot be read", provider.ErrAmbiguous)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%w: cal.com's data cannot be read: %w", provider.ErrAmbiguous, err)
	}
	return nil
}

// booking is a booking as Cal.com answers it.
type booking struct {
	UID                string            `json:"uid"`
	Title              string            `json:"title"`
	Status             string            `json:"status"`
	Start              time.Time         `json:"start"`
	End                time.Time         `json:"end"`
	EventTypeID        int               `json:"eventTypeId"`
	RescheduledFromUID string            `json:"rescheduledFromUid"`
	RescheduledToUID   string            `json:"rescheduledToUid"`
	UpdatedAt          *string           `json:"updatedAt"`
	Metadata           map[string]string `json:"metadata"`
}

func fromCalcom(cal string, b booking) calendar.Event {
	ev := calendar.Event{ID: b.UID, CalendarID: cal, Title: b.Title, Status: calendar.Confirmed,
		Span: calendar.Span{Start: b.Start.UTC(), End: b.End.UTC()}, Replaces: b.RescheduledFromUID, ReplacedBy: b.RescheduledToUID}
	if b.UpdatedAt != nil {
		ev.ETag = *b.UpdatedAt
	}
	switch b.Status {
	case "cancelled", "rejected":
		ev.Status = calendar.Cancelled
	case "pending":
		ev.Status = calendar.Tentative
	}
	m := b.Metadata
	ev.Marks = calendar.Marks{Key: m[calendar.MarkKey], Tenant: m[calendar.MarkTenant], Action: m[calendar.MarkAction],
		Step: m[calendar.MarkStep], Customer: m[calendar.MarkCustomer]}
	return ev
}

// availability says whether Cal.com's refusal is about the time.
func availability(e *apiError) bool {
	m := strings.ToLower(e.Message)
	for _, s := range []string{"no_available_users", "not available", "already has booking", "out_of_bounds", "out of bounds", "fully booked", "in the past"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
