// Package twilioprovider serves the messaging capability's SMS with Twilio,
// through its official Go SDK (twilio-go). Twilio has no idempotency keys,
// so a message step is keyless: a send that may have reached Twilio is
// never sent again blindly. What identifies the step to Twilio is the
// StatusCallback URL, which carries the step's external reference; Twilio's
// signed status callbacks name the message (its SID) for that step, and a
// step whose answer was lost is found again by that SID, or by its
// recipient, the time since its claim and the hash of its text (see
// docs/providers/twilio.md).
package twilioprovider

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	twilio "github.com/twilio/twilio-go"
	"github.com/twilio/twilio-go/client"
	api "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// Operation is the only operation this adapter performs.
const Operation = "message.send"

// StatusPath is oncecall's route for Twilio's status callbacks; StepParam
// names the step's external reference in its query.
const (
	StatusPath = "/v1/providers/twilio/status"
	StepParam  = "step"
)

// Defaults: Twilio's list of messages shows a new message within seconds;
// a minute of margin before "not found" counts.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultVisibilityDelay = time.Minute
	// clockSkew widens the search window before the claim: Twilio's clock
	// and the database's may differ.
	clockSkew = time.Minute
)

// Rejection codes of the adapter (Twilio's own refusals are TWILIO_<code>).
const (
	UnsupportedChannel = "UNSUPPORTED_CHANNEL"
	NoRecipient        = "NO_RECIPIENT"
)

// Config configures the adapter.
type Config struct {
	// AccountSID and AuthToken are the Twilio account's credentials
	// (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN).
	AccountSID, AuthToken string
	// From is the sending number (E.164); MessagingServiceSID a Messaging
	// Service (MG...) that picks the sender. One of them is required; the
	// service wins when both are set. They are the default: a tenant's own
	// sender, carried by the message's payload, is used instead.
	From, MessagingServiceSID string
	// BaseURL overrides Twilio's API base (https://api.twilio.com), e.g. for
	// the provider simulator.
	BaseURL string
	// PublicURL is oncecall's public base URL: status callbacks go to
	// PublicURL + StatusPath. Empty sends no StatusCallback (recovery then
	// relies on the lookups alone).
	PublicURL string
	// Timeout bounds each call. Default 10s.
	Timeout time.Duration
	// VisibilityDelay is how long after a send Twilio's lookups may still
	// miss the message. Default 1m.
	VisibilityDelay time.Duration
}

// Provider is the Twilio messaging adapter.
type Provider struct {
	api    *api.ApiService
	cfg    Config
	traits provider.Traits
	// pageSize is how many messages one page of a search lists.
	pageSize int
}

// New returns the adapter.
func New(cfg Config) (*Provider, error) {
	switch {
	case strings.TrimSpace(cfg.AccountSID) == "" || strings.TrimSpace(cfg.AuthToken) == "":
		return nil, errors.New("TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN are required for the twilio messaging provider")
	case cfg.From == "" && cfg.MessagingServiceSID == "":
		return nil, errors.New("TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID is required for the twilio messaging provider")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.VisibilityDelay <= 0 {
		cfg.VisibilityDelay = DefaultVisibilityDelay
	}
	c := &client.Client{
		Credentials: client.NewCredentials(cfg.AccountSID, cfg.AuthToken),
		HTTPClient: &http.Client{
			Timeout:       cfg.Timeout,
			Transport:     telemetry.Transport(nil),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	c.SetAccountSid(cfg.AccountSID)
	var base client.BaseClient = c
	if cfg.BaseURL != "" {
		u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("the Twilio API base %q is not a URL", cfg.BaseURL)
		}
		base = rebased{Client: c, base: u}
	}
	rest := twilio.NewRestClientWithParams(twilio.ClientParams{Client: base})
	return &Provider{
		api:      rest.Api,
		cfg:      cfg,
		pageSize: 1000,
		// No keys: a send is found again by lookups, authoritative once
		// the visibility delay has passed.
		traits: provider.Traits{HonoursKeys: false, VisibilityDelay: cfg.VisibilityDelay, AuthoritativeLookup: true, Timeout: cfg.Timeout},
	}, nil
}

// rebased sends twilio-go's requests to another API base.
type rebased struct {
	*client.Client
	base *url.URL
}

func (r rebased) SendRequest(method, rawURL string, data url.Values, headers map[string]any, body ...byte) (*http.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = r.base.Scheme, r.base.Host
	u.Path = r.base.Path + u.Path
	return r.Client.SendRequest(method, u.String(), data, headers, body...)
}

// Traits: no keys, authoritative lookups after the visibility delay.
func (p *Provider) Traits() provider.Traits { return p.traits }

// Identity: "twilio" on its account SID.
func (p *Provider) Identity() provider.Identity {
	return provider.Identity{Kind: "twilio", Account: p.cfg.AccountSID}
}

// sms is what the adapter reads of a message.send step's payload.
type sms struct {
	Channel   string `json:"channel"`
	To        string `json:"to"`
	Recipient string `json:"recipient"`
	Body      string `json:"body"`
	// From and MessagingService are the tenant's own sender, when it has
	// one; otherwise Config's.
	From             string `json:"from"`
	MessagingService string `json:"messaging_service"`
}

// sender is the message's sender: the tenant's own number or Messaging
// Service, else the process default (the service wins when both are
// configured).
func (p *Provider) sender(m sms) (from, service string) {
	switch {
	case m.MessagingService != "":
		return "", m.MessagingService
	case m.From != "":
		return m.From, ""
	case p.cfg.MessagingServiceSID != "":
		return "", p.cfg.MessagingServiceSID
	}
	return p.cfg.From, ""
}

func (m sms) to() string {
	if m.Recipient != "" {
		return m.Recipient
	}
	return m.To
}

func parse(w provider.Write) (sms, error) {
	if w.Operation != Operation {
		return sms{}, &provider.Rejected{Code: "UNSUPPORTED_OPERATION", Message: "the twilio provider performs message.send only"}
	}
	var m sms
	if err := json.Unmarshal(w.Payload, &m); err != nil {
		return sms{}, &provider.Rejected{Code: "INVALID_MESSAGE", Message: "the message payload cannot be read"}
	}
	switch {
	case m.Channel != "sms":
		return sms{}, &provider.Rejected{Code: UnsupportedChannel, Message: "the twilio provider sends sms only"}
	case m.to() == "":
		return sms{}, &provider.Rejected{Code: NoRecipient, Message: "the message has no phone number to send to"}
	}
	return m, nil
}

// CallbackURL is the StatusCallback of a step: the public base, the status
// route and the step's external reference.
func CallbackURL(public, ref string) string {
	return strings.TrimRight(public, "/") + StatusPath + "?" + url.Values{StepParam: {ref}}.Encode()
}

// Write sends the SMS once. Its outcome is what Twilio answered; a
// timeout, a 5xx or a lost connection is ambiguous: the message may exist.
func (p *Provider) Write(_ context.Context, w provider.Write) (provider.Record, error) {
	m, err := parse(w)
	if err != nil {
		return provider.Record{}, err
	}
	params := (&api.CreateMessageParams{}).SetTo(m.to()).SetBody(m.Body)
	if from, service := p.sender(m); service != "" {
		params.SetMessagingServiceSid(service)
	} else {
		params.SetFrom(from)
	}
	if p.cfg.PublicURL != "" {
		params.SetStatusCallback(CallbackURL(p.cfg.PublicURL, w.ExternalRef))
	}
	msg, err := p.api.CreateMessage(params)
	if err != nil {
		return provider.Record{}, classify(err)
	}
	if msg.Sid == nil || *msg.Sid == "" {
		return provider.Record{}, fmt.Errorf("%w: twilio answered without a message SID", provider.ErrAmbiguous)
	}
	return provider.Record{ID: *msg.Sid, ExternalRef: w.ExternalRef, Status: "committed"}, nil
}

// Find looks the step's message up in Twilio: by the SID a signed status
// callback named for the step, else in Twilio's whole list of the messages
// to its recipient from its sender, among those created since its claim
// (a message still queued has no date_sent, so the window is by
// date_created, compared here: Twilio filters by date_sent only).
//
// Found is a message of that list carrying the step's text (the oldest one
// no other step holds), or the SID's message, to the recipient from the
// sender since the claim, whatever Twilio made of its text. Not found is
// positive evidence of absence: every page was read and no message since
// the claim to that recipient from that sender is free. Any other message
// there may be the step's with its text rewritten (link shortening, smart
// encoding, an opt-out footer): that is provider.ErrLookalike, no evidence
// either way. The driver takes "not found" only once the visibility delay
// has passed.
func (p *Provider) Find(ctx context.Context, q provider.Query) (provider.Record, bool, error) {
	m, err := parse(q.Write)
	if err != nil {
		return provider.Record{}, false, err
	}
	from, service := p.sender(m)
	since := q.Since.Add(-clockSkew)
	// ours: to the recipient, from the sender, created since the claim.
	ours := func(msg api.ApiV2010Message) bool {
		if msg.Sid == nil || msg.To == nil || *msg.To != m.to() {
			return false
		}
		if service != "" {
			if msg.MessagingServiceSid == nil || *msg.MessagingServiceSid != service {
				return false
			}
		} else if msg.From == nil || *msg.From != from {
			return false
		}
		created, err := createdAt(msg)
		// A date Twilio wrote in another form could be in the window.
		return err != nil || !created.Before(since)
	}
	found := func(sid string) provider.Record {
		return provider.Record{ID: sid, ExternalRef: q.Write.ExternalRef, Status: "committed"}
	}
	if q.ProviderRef != "" {
		msg, err := p.api.FetchMessage(q.ProviderRef, nil)
		switch {
		case err == nil && ours(*msg):
			return found(*msg.Sid), true, nil
		case err != nil && !notFound(err):
			return provider.Record{}, false, classify(err)
		}
	}
	list, err := p.list(m.to(), from)
	if err != nil {
		return provider.Record{}, false, err
	}
	want := sha256.Sum256([]byte(m.Body))
	var match *api.ApiV2010Message
	lookalikes := 0
	for i := range list {
		msg := &list[i]
		if !ours(*msg) {
			continue
		}
		if q.Taken != nil {
			taken, err := q.Taken(ctx, *msg.Sid)
			if err != nil {
				return provider.Record{}, false, err
			}
			if taken {
				continue
			}
		}
		if msg.Body == nil || sha256.Sum256([]byte(body(*msg.Body))) != want {
			lookalikes++
			continue
		}
		if match == nil || older(*msg, *match) {
			match = msg
		}
	}
	switch {
	case match != nil:
		return found(*match.Sid), true, nil
	case lookalikes > 0:
		return provider.Record{}, false, fmt.Errorf("%w: %d message(s) to the recipient from the sender since the claim, with another text", provider.ErrLookalike, lookalikes)
	}
	return provider.Record{}, false, nil
}

// maxPages bounds a search: a list longer than this many pages is not
// read to its end, so it proves nothing.
const maxPages = 50

// list reads every page of Twilio's messages to a recipient (from a
// number, when from is set: a Messaging Service's are told apart by their
// messaging_service_sid, since Twilio lists by number only).
func (p *Provider) list(to, from string) ([]api.ApiV2010Message, error) {
	params := (&api.ListMessageParams{}).SetTo(to).SetPageSize(p.pageSize)
	if from != "" {
		params.SetFrom(from)
	}
	var out []api.ApiV2010Message
	token, page := "", ""
	for range maxPages {
		resp, err := p.api.PageMessage(params, token, page)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, resp.Messages...)
		if resp.NextPageUri == nil || *resp.NextPageUri == "" {
			return out, nil
		}
		next, err := url.Parse(*resp.NextPageUri)
		if err != nil {
			return nil, fmt.Errorf("twilio's next page cannot be read: %w", err)
		}
		token, page = next.Query().Get("PageToken"), next.Query().Get("Page")
	}
	return nil, fmt.Errorf("twilio lists more than %d pages of messages to the recipient: the search is not complete", maxPages)
}

// createdAt is when Twilio created a message (its date_created, RFC 2822).
func createdAt(msg api.ApiV2010Message) (time.Time, error) {
	if msg.DateCreated == nil {
		return time.Time{}, errors.New("no date_created")
	}
	return time.Parse(time.RFC1123Z, *msg.DateCreated)
}

// older reports whether a was created before b (by SID when Twilio's dates
// are equal or unreadable, which keeps the choice stable).
func older(a, b api.ApiV2010Message) bool {
	ta, ea := createdAt(a)
	tb, eb := createdAt(b)
	if ea == nil && eb == nil && !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return *a.Sid < *b.Sid
}

// trialPrefix is what Twilio puts before the text of a trial account's
// messages.
const trialPrefix = "Sent from your Twilio trial account - "

func body(s string) string { return strings.TrimPrefix(s, trialPrefix) }

// LookupByKey: Twilio has no keys; the driver uses Find.
func (p *Provider) LookupByKey(context.Context, string, string) (provider.Record, bool, error) {
	return provider.Record{}, false, errors.New("twilio has no idempotency keys")
}

// LookupByRef: Twilio keeps no reference of oncecall's; the driver uses Find.
func (p *Provider) LookupByRef(context.Context, string, string) ([]provider.Record, error) {
	return nil, errors.New("twilio messages are found by recipient and text, not by reference")
}

func notFound(err error) bool {
	te, ok := errors.AsType[*client.TwilioRestError](err)
	return ok && te.Status == http.StatusNotFound
}

// classify maps a twilio-go error to oncecall's classes: Twilio's refusal
// of the message (a 4xx other than authentication and rate limiting:
// invalid or unsubscribed number, no sender) is a rejection; a refused
// request (401, 403, 429) or a connection never opened was not sent;
// anything else (5xx, a timeout, a lost connection, an unreadable answer)
// is ambiguous: the message may exist.
func classify(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		// The URL of a lookup holds the recipient's number: keep it out
		// of errors, which are logged and stored.
		err = fmt.Errorf("twilio %s: %w", ue.Op, ue.Err)
	}
	if te, ok := errors.AsType[*client.TwilioRestError](err); ok {
		switch {
		case te.Status == http.StatusUnauthorized || te.Status == http.StatusForbidden || te.Status == http.StatusTooManyRequests:
			return fmt.Errorf("%w: twilio answered %d (error %d)", provider.ErrNotSent, te.Status, te.Code)
		case te.Status >= 400 && te.Status < 500 && te.Status != http.StatusRequestTimeout && te.Status != http.StatusConflict:
			// Twilio's message may repeat the phone number: only the code is kept.
			return &provider.Rejected{Code: fmt.Sprintf("TWILIO_%d", te.Code), Message: fmt.Sprintf("twilio refused the message (error %d)", te.Code)}
		}
		return fmt.Errorf("%w: twilio answered %d (error %d)", provider.ErrAmbiguous, te.Status, te.Code)
	}
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
		return fmt.Errorf("%w: %w", provider.ErrNotSent, err)
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return fmt.Errorf("%w: %w", provider.ErrNotSent, err)
	}
	return fmt.Errorf("%w: %w", provider.ErrAmbiguous, err)
}
