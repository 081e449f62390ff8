package calendars

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// Change notifications. A provider tells oncecall that a calendar changed
// (Google: a watch channel's notification; Microsoft Graph: a
// subscription's; Cal.com: a webhook) at
// POST /v1/calendar-notifications/{provider}/{connection}. No API key
// comes with it: each is verified with the connection's notification
// secret (SettingNotificationSecret), which oncecall gave the provider
// when it asked for the notifications (Watch). A verified notification
// drops what this server read of the calendar it names (or of every
// calendar of the connection when it names none oncecall knows), so the
// next read sees the change before the cache's reuse time has passed; a
// forged one changes nothing. See docs/providers/google-calendar.md,
// microsoft-365.md and calcom.md.

// SettingNotificationSecret (every provider) names where the secret that
// verifies the connection's change notifications is kept, as credentials
// are: file:<path> or env:<NAME>. Without it the connection takes none.
const SettingNotificationSecret = "notification_secret"

// NotificationPath is the path, under a server's public URL, where the
// provider of connection posts its change notifications.
func NotificationPath(c oncecall.CalendarConnection) string {
	return "/v1/calendar-notifications/" + c.Provider + "/" + c.ID.String()
}

// Errors of Notify.
var (
	// ErrNoNotifications: no connection by that id and provider takes
	// change notifications here.
	ErrNoNotifications = errors.New("no calendar connection by that id and provider takes change notifications")
	// ErrNotVerified: the notification does not carry the connection's
	// secret (a forged or unsigned one).
	ErrNotVerified = errors.New("the notification is not verified")
	// ErrBadNotification: a verified notification that cannot be read.
	ErrBadNotification = errors.New("the notification cannot be read")
)

// Notification is a change notification as it arrived.
type Notification struct {
	Provider   string
	Connection string
	Header     http.Header
	Query      url.Values
	Body       []byte
}

// Noticed is what a notification did.
type Noticed struct {
	// Echo, when set, is Microsoft Graph's validation token, answered as
	// text/plain to prove the endpoint when a subscription is created.
	Echo string
	// Calendars are the calendars whose reads were dropped.
	Calendars []string
}

// Notify verifies a change notification and drops what this server read of
// the calendar it names. Its errors are ErrNoNotifications, ErrNotVerified
// (with why), ErrBadNotification, or a failure to read the connection.
func (s *Service) Notify(ctx context.Context, n Notification) (Noticed, error) {
	id, err := uuid.Parse(n.Connection)
	if err != nil {
		return Noticed{}, ErrNoNotifications
	}
	conn, err := s.cfg.Store.CalendarConnectionByID(ctx, id)
	if errors.Is(err, db.ErrNotFound) || err == nil && conn.Provider != n.Provider {
		return Noticed{}, ErrNoNotifications
	}
	if err != nil {
		return Noticed{}, fmt.Errorf("read the calendar connection: %w", err)
	}
	ref := conn.Settings[SettingNotificationSecret]
	if ref == "" {
		return Noticed{}, ErrNoNotifications
	}
	secret, err := s.cfg.Secrets.Read(ref)
	if err != nil {
		// The secret is not readable on this server: nothing can be
		// verified here.
		return Noticed{}, fmt.Errorf("%w: %w", ErrNoNotifications, err)
	}
	key := strings.TrimSpace(string(secret))
	var named []string // empty: every calendar of the connection
	switch conn.Provider {
	case oncecall.CalendarGoogle:
		named, err = googleNotice(n, key)
	case oncecall.CalendarMicrosoft:
		var echo string
		if echo, named, err = graphNotice(n, key); err == nil && echo != "" {
			return Noticed{Echo: echo}, nil
		}
	case oncecall.CalendarCalcom:
		named, err = calcomNotice(n, key)
	default:
		return Noticed{}, ErrNoNotifications
	}
	if err != nil {
		return Noticed{}, err
	}
	t, connected, err := s.Tenant(ctx, conn.TenantID)
	if err != nil {
		return Noticed{}, err
	}
	if !connected || t.Conn.ID != conn.ID {
		return Noticed{}, ErrNoNotifications
	}
	known := t.Calendars()
	var dropped []string
	for _, cal := range known {
		if len(named) == 0 || containsFold(named, cal) {
			s.Invalidate(conn.TenantID, cal)
			dropped = append(dropped, cal)
		}
	}
	if len(dropped) == 0 && len(named) > 0 {
		// A calendar named in a way oncecall's map does not spell (a
		// mailbox by its object id): every calendar is read again.
		for _, cal := range known {
			s.Invalidate(conn.TenantID, cal)
		}
		dropped = known
	}
	return Noticed{Calendars: dropped}, nil
}

func containsFold(list []string, v string) bool {
	for _, s := range list {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}

// equal compares a secret sent back by a provider with the connection's in
// constant time.
func equal(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// Google's notification headers.
const (
	GoogleChannelID     = "X-Goog-Channel-ID"
	GoogleChannelToken  = "X-Goog-Channel-Token"
	GoogleResourceState = "X-Goog-Resource-State"
	GoogleResourceURI   = "X-Goog-Resource-URI"
)

// googleNotice verifies a watch channel's notification: the channel's
// token is the secret. The calendar is the one of its resource URI
// (.../calendars/{id}/events).
func googleNotice(n Notification, secret string) ([]string, error) {
	if n.Header.Get(GoogleChannelID) == "" {
		return nil, fmt.Errorf("%w: no %s header", ErrNotVerified, GoogleChannelID)
	}
	if !equal(n.Header.Get(GoogleChannelToken), secret) {
		return nil, fmt.Errorf("%w: the %s header is not the connection's channel token", ErrNotVerified, GoogleChannelToken)
	}
	switch n.Header.Get(GoogleResourceState) {
	case "sync", "exists", "not_exists":
	default:
		return nil, fmt.Errorf("%w: %s must be sync, exists or not_exists", ErrBadNotification, GoogleResourceState)
	}
	u, err := url.Parse(n.Header.Get(GoogleResourceURI))
	if err != nil {
		return nil, nil //nolint:nilerr // no calendar named: every one is read again
	}
	_, rest, ok := strings.Cut(u.EscapedPath(), "/calendars/")
	if !ok {
		return nil, nil
	}
	cal, _, _ := strings.Cut(rest, "/")
	if cal, err = url.PathUnescape(cal); err != nil || cal == "" {
		return nil, nil //nolint:nilerr // as above
	}
	return []string{cal}, nil
}

// GraphNotifications is the body of Microsoft Graph's change
// notifications (a changeNotificationCollection).
type GraphNotifications struct {
	Value []GraphNotification `json:"value"`
}

// GraphNotification is one changeNotification, as far as oncecall reads it.
type GraphNotification struct {
	SubscriptionID string `json:"subscriptionId"`
	ChangeType     string `json:"changeType"`
	ClientState    string `json:"clientState"`
	Resource       string `json:"resource"`
	TenantID       string `json:"tenantId,omitempty"`
}

// graphNotice answers a subscription's validation request (its
// validationToken is echoed) or verifies its notifications: every one
// carries the secret as clientState. The calendars are the mailboxes of
// their resources (users/{id}/events/{id}).
func graphNotice(n Notification, secret string) (echo string, named []string, err error) {
	if n.Query.Has("validationToken") {
		token := n.Query.Get("validationToken")
		if token == "" {
			return "", nil, fmt.Errorf("%w: an empty validationToken", ErrBadNotification)
		}
		return token, nil, nil
	}
	var body GraphNotifications
	if err := json.Unmarshal(n.Body, &body); err != nil || len(body.Value) == 0 {
		return "", nil, fmt.Errorf("%w: want a JSON object whose value lists the notifications", ErrNotVerified)
	}
	for _, v := range body.Value {
		if !equal(v.ClientState, secret) {
			return "", nil, fmt.Errorf("%w: a notification's clientState is not the connection's", ErrNotVerified)
		}
	}
	for _, v := range body.Value {
		parts := strings.Split(strings.Trim(v.Resource, "/"), "/")
		if len(parts) < 2 || !strings.EqualFold(parts[0], "users") {
			return "", nil, nil // one names no mailbox: every calendar
		}
		named = append(named, parts[1])
	}
	return "", named, nil
}

// CalcomSignature is the header of Cal.com's webhook signature: the hex
// HMAC-SHA256 of the body with the webhook's secret.
const CalcomSignature = "X-Cal-Signature-256"

// CalcomSign is the signature Cal.com sends with body.
func CalcomSign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// calcomNotice verifies a webhook's signature. The calendar is the
// booking's event type.
func calcomNotice(n Notification, secret string) ([]string, error) {
	got, err := hex.DecodeString(n.Header.Get(CalcomSignature))
	want, _ := hex.DecodeString(CalcomSign(secret, n.Body))
	if err != nil || !hmac.Equal(got, want) {
		return nil, fmt.Errorf("%w: the %s header does not sign this body with the connection's secret", ErrNotVerified, CalcomSignature)
	}
	var hook struct {
		TriggerEvent string `json:"triggerEvent"`
		Payload      struct {
			EventTypeID json.Number `json:"eventTypeId"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(n.Body, &hook); err != nil || hook.TriggerEvent == "" {
		return nil, fmt.Errorf("%w: want a JSON object with triggerEvent and payload", ErrBadNotification)
	}
	if id, err := strconv.ParseInt(hook.Payload.EventTypeID.String(), 10, 64); err == nil {
		return []string{strconv.FormatInt(id, 10)}, nil
	}
	return nil, nil
}

// Watch asks the provider of the tenant's connection to notify address of
// every change of each of its calendars, with the connection's
// notification secret: Google watch channels (events.watch), Microsoft
// Graph subscriptions, a Cal.com webhook. It returns what each answered.
func (s *Service) Watch(ctx context.Context, tenant uuid.UUID, address string) ([]calendar.Watched, error) {
	cal, t, ok, err := s.Calendar(ctx, tenant)
	if err != nil || !ok {
		return nil, noCalendar(err, ok)
	}
	w, ok := cal.(calendar.Watcher)
	if !ok {
		return nil, fmt.Errorf("the %s adapter cannot ask for change notifications", t.Conn.Provider)
	}
	ref := t.Conn.Settings[SettingNotificationSecret]
	if ref == "" {
		return nil, fmt.Errorf("the connection has no %s: connect it again with --notification-secret-env or --notification-secret-file", SettingNotificationSecret)
	}
	secret, err := s.cfg.Secrets.Read(ref)
	if err != nil {
		return nil, err
	}
	return w.Watch(ctx, t.Calendars(), address, strings.TrimSpace(string(secret)))
}
