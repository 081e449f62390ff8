// Package stripeprovider serves the payments capability with Stripe, through
// its official Go SDK (stripe-go). A charge is one step of oncecall's
// provider protocol done as Stripe does payments with a hold: a
// PaymentIntent with manual capture (the hold) is created and confirmed,
// then captured for the charged amount; a hold that is refused or cannot be
// captured is cancelled. Every request carries an Idempotency-Key derived
// from the step's provider key, so a re-send within Stripe's key retention
// (24h) replays the same PaymentIntent and the same capture instead of
// charging twice. Metadata carries the action and step ids, so a write can
// be found again by Stripe's search (see docs/providers/stripe.md).
package stripeprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// Metadata keys set on every PaymentIntent oncecall creates.
const (
	MetaKey    = "oncecall_key"    // the step's provider key
	MetaAction = "oncecall_action" // the action id
	MetaStep   = "oncecall_step"   // the step name
	MetaIntent = "oncecall_intent" // oncecall's payment intent id
	// The charge that captured a hold made at approval: its action and
	// step, set by the capture (the metadata above names the approval).
	MetaChargeAction = "oncecall_charge_action"
	MetaChargeStep   = "oncecall_charge_step"
)

// Operations this adapter performs: a charge (capture a hold made at
// approval, or hold and capture at once), and a hold at approval time
// (provider.Holds).
const (
	Operation     = "payment.charge"
	HoldOperation = "payment_intent.create"
)

// HoldWindow is how long Stripe keeps a card hold when the charge does not
// say (payment_method_details.card.capture_before): 7 days from creation.
const HoldWindow = 7 * 24 * time.Hour

// Rejection codes.
const (
	// Declined: the card was declined or needs the cardholder (3-D Secure);
	// nothing was charged and the hold, if any, is cancelled.
	Declined = "PAYMENT_DECLINED"
	// AuthenticationRequired: an off-session hold on a saved card that the
	// bank wants the cardholder to authenticate; nothing is held.
	AuthenticationRequired = "AUTHENTICATION_REQUIRED"
)

// Default traits: Stripe remembers idempotency keys for at least 24 hours,
// and its search sees a new object within about a minute.
const (
	KeyRetention     = 24 * time.Hour
	SearchDelay      = time.Minute
	DefaultTimeout   = 10 * time.Second
	captureKeySuffix = "/capture"
	cancelKeySuffix  = "/cancel"
)

// Config configures the adapter.
type Config struct {
	// SecretKey is the Stripe secret key (sk_live_..., sk_test_..., or a
	// restricted key allowed to write PaymentIntents).
	SecretKey string
	// BaseURL overrides Stripe's API base (https://api.stripe.com), e.g. for
	// stripe-mock or a staging fake.
	BaseURL string
	// Account, when set, is sent as Stripe-Account: the connected account
	// (Stripe Connect) the payments are made on.
	Account string
	// Timeout bounds each call. Default 10s.
	Timeout time.Duration
	// SearchDelay is how long after a write Stripe's search may still miss
	// it. Default 1m.
	SearchDelay time.Duration
	// LinkReturnURL, when set, is where a payment link's page sends the
	// customer once they paid (success_url); unset: Stripe's own page.
	LinkReturnURL string
}

// Provider is the Stripe payments adapter.
type Provider struct {
	sc     *stripe.Client
	cfg    Config
	traits provider.Traits
}

// New returns the adapter. The SDK's own network retries are off: recovery
// is oncecall's, by evidence, with the same keys.
func New(cfg Config) (*Provider, error) {
	if strings.TrimSpace(cfg.SecretKey) == "" {
		return nil, errors.New("STRIPE_SECRET_KEY is required for the stripe payments provider")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.SearchDelay <= 0 {
		cfg.SearchDelay = SearchDelay
	}
	bc := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: cfg.Timeout, Transport: telemetry.Transport(nil)},
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if cfg.BaseURL != "" {
		bc.URL = stripe.String(strings.TrimRight(cfg.BaseURL, "/"))
	}
	backends := stripe.NewBackendsWithConfig(bc)
	return &Provider{
		sc:  stripe.NewClient(cfg.SecretKey, stripe.WithBackends(backends)),
		cfg: cfg,
		traits: provider.Traits{
			HonoursKeys: true, KeyRetention: KeyRetention, VisibilityDelay: cfg.SearchDelay,
			AuthoritativeLookup: true, Timeout: cfg.Timeout,
		},
	}, nil
}

// Traits: Stripe honours idempotency keys for 24h.
func (p *Provider) Traits() provider.Traits { return p.traits }

// Identity: "stripe" on Config.Account, or, without one, on the platform
// of the key, named by the key's mode ("platform/live", "platform/test"):
// the key itself is a secret. A step's own connected account (a tenant's)
// is in its payload, reached through the platform.
func (p *Provider) Identity() provider.Identity {
	if p.cfg.Account != "" {
		return provider.Identity{Kind: "stripe", Account: p.cfg.Account}
	}
	mode := "platform"
	switch {
	case strings.Contains(p.cfg.SecretKey, "_live_"):
		mode += "/live"
	case strings.Contains(p.cfg.SecretKey, "_test_"):
		mode += "/test"
	}
	return provider.Identity{Kind: "stripe", Account: mode}
}

// charge is the payload of a payment.charge step.
type charge struct {
	PaymentIntentID string `json:"payment_intent_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	PaymentMethod   string `json:"payment_method"`
	// Hold is the PaymentIntent held at approval; the charge captures it.
	Hold string `json:"hold"`
	// Account is the connected account (Stripe-Account) of the request;
	// "" for Config.Account.
	Account string `json:"account"`
	// Customer, set for a card the customer saved (cus_...), makes the
	// hold off-session: the cardholder is not there to authenticate.
	Customer string `json:"customer"`
}

// PaymentMethod maps oncecall's payment methods to Stripe payment methods.
// Intents approved with the local test methods use Stripe's test cards; any
// other value (a saved card, pm_...) is sent as it is.
func PaymentMethod(m string) string {
	switch m {
	case "", "pm_card_ok":
		return "pm_card_visa"
	case "pm_card_declined":
		return "pm_card_chargeDeclined"
	}
	return m
}

// params are a request's headers: its Idempotency-Key and the account it
// is made on (the tenant's, else the process default).
func (p *Provider) params(key, account string) stripe.Params {
	var ps stripe.Params
	if key != "" {
		ps.SetIdempotencyKey(key)
	}
	if acct := p.account(account); acct != "" {
		ps.SetStripeAccount(acct)
	}
	return ps
}

func (p *Provider) account(account string) string {
	if account != "" {
		return account
	}
	return p.cfg.Account
}

// Write charges: hold (create and confirm a PaymentIntent with manual
// capture) under the step's key, then capture under a key derived from it.
func (p *Provider) Write(ctx context.Context, w provider.Write) (provider.Record, error) {
	switch w.Operation {
	case LinkCreateOperation, LinkOperation:
		return p.writeLink(ctx, w)
	case CancelOperation:
		return p.cancelHold(ctx, w)
	}
	if w.Operation != Operation && w.Operation != HoldOperation {
		return provider.Record{}, &provider.Rejected{Code: "UNSUPPORTED_OPERATION", Message: "the stripe provider performs payment.charge, payment_intent.create, payment_intent.cancel and payment.link only"}
	}
	var c charge
	if err := json.Unmarshal(w.Payload, &c); err != nil || c.Amount <= 0 || c.Currency == "" {
		return provider.Record{}, &provider.Rejected{Code: "INVALID_CHARGE", Message: "the charge payload has no amount or currency"}
	}
	if w.Operation == HoldOperation {
		return p.holdAtApproval(ctx, w, c)
	}
	if c.Hold != "" {
		return p.captureHold(ctx, w, c)
	}
	pi, err := p.hold(ctx, w, c)
	if err != nil {
		return provider.Record{}, err
	}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		return record(pi), nil
	case stripe.PaymentIntentStatusRequiresCapture:
	case stripe.PaymentIntentStatusProcessing:
		return provider.Record{}, fmt.Errorf("%w: payment intent %s is still processing", provider.ErrAmbiguous, pi.ID)
	default:
		// Refused (requires_payment_method, requires_action, canceled):
		// nothing was charged; release what Stripe holds.
		p.cancel(ctx, w.Key, c.Account, pi.ID)
		return provider.Record{}, &provider.Rejected{Code: Declined, Message: "payment intent " + pi.ID + " is " + string(pi.Status)}
	}
	return p.captureOrRelease(ctx, w, c, pi.ID, true)
}

// captureOrRelease captures amount of the hold id under a key derived from
// the step's; when release is set, a hold whose capture is refused
// definitively is cancelled.
func (p *Provider) captureOrRelease(ctx context.Context, w provider.Write, c charge, id string, release bool) (provider.Record, error) {
	pi := &stripe.PaymentIntent{ID: id}
	captured, err := p.capture(ctx, w, c, pi.ID)
	if err == nil && captured.Status == stripe.PaymentIntentStatusSucceeded {
		return record(captured), nil
	}
	// The capture failed, was answered ambiguously, or its key replays an
	// earlier failure: the PaymentIntent itself says whether it is captured
	// (a PaymentIntent is captured at most once, whatever the keys).
	now, rerr := p.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, &stripe.PaymentIntentRetrieveParams{Params: p.params("", c.Account)})
	if rerr == nil {
		switch now.Status {
		case stripe.PaymentIntentStatusSucceeded:
			// Captured: by this charge, or by another.
			return captureEvidence(now, w, c)
		case stripe.PaymentIntentStatusCanceled:
			return provider.Record{}, &provider.Rejected{Code: Declined, Message: "payment intent " + pi.ID + " is canceled"}
		}
	}
	if err == nil {
		return provider.Record{}, fmt.Errorf("%w: payment intent %s is %s after capture", provider.ErrAmbiguous, pi.ID, captured.Status)
	}
	err = classify(err)
	if rej, ok := errors.AsType[*provider.Rejected](err); ok && rerr == nil && now.Status == stripe.PaymentIntentStatusRequiresCapture {
		// A definitive refusal of the capture of a hold that is still
		// uncaptured: release a hold made for this charge (a hold made at
		// approval stays for another charge of the intent).
		if release {
			p.cancel(ctx, w.Key, c.Account, pi.ID)
		}
		return provider.Record{}, rej
	}
	return provider.Record{}, fmt.Errorf("%w: hold %s made, capture not confirmed: %w", provider.ErrAmbiguous, pi.ID, err)
}

// capture captures amount of a hold, under a key derived from the step's.
// The capture of a hold made at approval names the charge in metadata.
func (p *Provider) capture(ctx context.Context, w provider.Write, c charge, id string) (*stripe.PaymentIntent, error) {
	params := &stripe.PaymentIntentCaptureParams{
		Params: p.params(w.Key+captureKeySuffix, c.Account), AmountToCapture: stripe.Int64(c.Amount),
	}
	if c.Hold != "" {
		action, stepName, _ := strings.Cut(w.ExternalRef, "/")
		params.AddMetadata(MetaChargeAction, action)
		params.AddMetadata(MetaChargeStep, stepName)
	}
	return p.sc.V1PaymentIntents.Capture(ctx, id, params)
}

// hold creates and confirms the PaymentIntent with manual capture.
func (p *Provider) hold(ctx context.Context, w provider.Write, c charge) (*stripe.PaymentIntent, error) {
	action, stepName, _ := strings.Cut(w.ExternalRef, "/")
	params := &stripe.PaymentIntentCreateParams{
		Params:             p.params(w.Key, c.Account),
		Amount:             stripe.Int64(c.Amount),
		Currency:           stripe.String(strings.ToLower(c.Currency)),
		CaptureMethod:      stripe.String(string(stripe.PaymentIntentCaptureMethodManual)),
		Confirm:            stripe.Bool(true),
		PaymentMethod:      stripe.String(PaymentMethod(c.PaymentMethod)),
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}),
	}
	if c.Customer != "" {
		params.Customer = stripe.String(c.Customer)
		params.OffSession = stripe.Bool(true)
	}
	params.AddMetadata(MetaKey, w.Key)
	params.AddMetadata(MetaAction, action)
	params.AddMetadata(MetaStep, stepName)
	params.AddMetadata(MetaIntent, c.PaymentIntentID)
	// The latest charge tells until when the hold can be captured.
	params.AddExpand("latest_charge")
	pi, err := p.sc.V1PaymentIntents.Create(ctx, params)
	if err == nil {
		return pi, nil
	}
	if se, ok := errors.AsType[*stripe.Error](err); ok && se.Type == stripe.ErrorTypeCard && se.PaymentIntent != nil && se.PaymentIntent.ID != "" {
		p.cancel(ctx, w.Key, c.Account, se.PaymentIntent.ID)
	}
	err = classify(err)
	if provider.Classify(err) != "ambiguous" {
		return nil, err
	}
	// Stripe replays a 500 under its key for good: a hold made before the
	// failure is found by its key in metadata (once search sees it).
	if found, ferr := p.searchPI(ctx, c.Account, fmt.Sprintf("metadata['%s']:'%s'", MetaKey, w.Key)); ferr == nil && found != nil {
		return found, nil
	}
	return nil, err
}

// cancel releases a hold that will not be captured. Its failure changes
// nothing: an uncaptured hold is never charged and expires on its own.
func (p *Provider) cancel(ctx context.Context, key, account, id string) {
	_, _ = p.sc.V1PaymentIntents.Cancel(ctx, id, &stripe.PaymentIntentCancelParams{Params: p.params(key+cancelKeySuffix, account)})
}

// errNeedsWrite refuses a lookup by key or reference alone: a Stripe write
// is made on a connected account that only its step's payload names, and
// asking another account (the platform's) finds nothing there, a "not
// found" that is no evidence. The driver looks a step up with LookupWrite.
var errNeedsWrite = errors.New("a Stripe write is looked up with its step's write (LookupWrite), on the account it was made on")

// LookupByKey is refused: see LookupWrite.
func (p *Provider) LookupByKey(context.Context, string, string) (provider.Record, bool, error) {
	return provider.Record{}, false, errNeedsWrite
}

// LookupByRef is refused: see LookupWrite.
func (p *Provider) LookupByRef(context.Context, string, string) ([]provider.Record, error) {
	return nil, errNeedsWrite
}

// Retrieve looks a PaymentIntent up by its id on account ("" for
// Config.Account).
func (p *Provider) Retrieve(ctx context.Context, account, id string) (provider.Record, error) {
	pi, err := p.sc.V1PaymentIntents.Retrieve(ctx, id, &stripe.PaymentIntentRetrieveParams{Params: p.params("", account)})
	if err != nil {
		return provider.Record{}, err
	}
	return evidence(pi)
}

// searchPI returns the first PaymentIntent a search query finds, or nil.
func (p *Provider) searchPI(ctx context.Context, account, q string) (*stripe.PaymentIntent, error) {
	sp := &stripe.PaymentIntentSearchParams{}
	sp.Query = q
	if acct := p.account(account); acct != "" {
		sp.SetStripeAccount(acct)
	}
	for pi, err := range p.sc.V1PaymentIntents.Search(ctx, sp) {
		return pi, err
	}
	return nil, nil
}

// evidence is what a PaymentIntent says about a charge: captured
// (succeeded), refused (canceled, or needing a new payment method), or not
// settled yet (a hold not captured, processing): an error, never "not
// found", so the step stays unknown and goes to an operator in time.
func evidence(pi *stripe.PaymentIntent) (provider.Record, error) {
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		return record(pi), nil
	case stripe.PaymentIntentStatusCanceled, stripe.PaymentIntentStatusRequiresPaymentMethod:
		return provider.Record{ID: pi.ID, Status: "rejected", Code: Declined}, nil
	}
	return provider.Record{}, fmt.Errorf("payment intent %s is %s: the hold is not captured", pi.ID, pi.Status)
}

// captureEvidence is what a captured (succeeded) PaymentIntent says about
// charge c of step w. Stripe captures a PaymentIntent once, so its capture
// is this charge's only if it names this charge (the capture of a hold made
// at approval names its charge in oncecall_charge_action and _step; a hold
// the charge made itself is named by oncecall_action and _step at its
// creation) and is for the charge's amount. A capture naming another
// charge is that charge's: this one captured nothing, and is refused
// INTENT_ALREADY_CAPTURED. A capture naming no charge (made in the
// Dashboard, or before captures named their charge), or naming this one
// for another amount, is provider.ErrConflict: an operator decides.
func captureEvidence(pi *stripe.PaymentIntent, w provider.Write, c charge) (provider.Record, error) {
	action, stepName, _ := strings.Cut(w.ExternalRef, "/")
	byAction, byStep := pi.Metadata[MetaAction], pi.Metadata[MetaStep]
	if c.Hold != "" {
		byAction, byStep = pi.Metadata[MetaChargeAction], pi.Metadata[MetaChargeStep]
	}
	switch {
	case byAction == "" && byStep == "":
		return provider.Record{}, fmt.Errorf("%w: payment intent %s was captured by no charge of oncecall's", provider.ErrConflict, pi.ID)
	case byAction != action || byStep != stepName:
		return provider.Record{}, &provider.Rejected{Code: AlreadyCaptured, Message: "payment intent " + pi.ID + " was captured by another charge"}
	case pi.AmountReceived != c.Amount:
		return provider.Record{}, fmt.Errorf("%w: payment intent %s was captured for %d, the charge is for %d", provider.ErrConflict, pi.ID, pi.AmountReceived, c.Amount)
	}
	return record(pi), nil
}

// chargeLookup is captureEvidence as a lookup's answer: a charge refused
// is found rejected.
func chargeLookup(pi *stripe.PaymentIntent, w provider.Write, c charge) (provider.Record, bool, error) {
	if pi.Status != stripe.PaymentIntentStatusSucceeded {
		rec, err := evidence(pi)
		return rec, err == nil, err
	}
	rec, err := captureEvidence(pi, w, c)
	if rej, ok := err.(*provider.Rejected); ok {
		return provider.Record{ID: pi.ID, Status: "rejected", Code: rej.Code}, true, nil
	}
	return rec, err == nil, err
}

func record(pi *stripe.PaymentIntent) provider.Record {
	return provider.Record{ID: pi.ID, ExternalRef: pi.Metadata[MetaAction] + "/" + pi.Metadata[MetaStep], Status: "committed"}
}

// classify maps a stripe-go error to oncecall's classes: a card error is a
// rejection (nothing charged); a refused request (authentication, rate
// limit) or a connection that never opened was not sent; an idempotency
// error means the key holds another write; anything else (5xx, timeouts,
// lost connections, a key in use) is ambiguous.
func classify(err error) error {
	var se *stripe.Error
	if errors.As(err, &se) {
		code := string(se.Code)
		switch {
		case se.Type == stripe.ErrorTypeCard && (se.Code == stripe.ErrorCodeAuthenticationRequired || se.DeclineCode == stripe.DeclineCodeAuthenticationRequired):
			return &provider.Rejected{Code: AuthenticationRequired, Message: "card error: the bank requires the cardholder to authenticate"}
		case se.Type == stripe.ErrorTypeCard:
			return &provider.Rejected{Code: Declined, Message: "card error: " + string(se.DeclineCode) + " " + code}
		case se.Type == stripe.ErrorTypeIdempotency:
			return fmt.Errorf("%w: stripe %s", provider.ErrKeyConflict, code)
		case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden ||
			se.HTTPStatusCode == http.StatusTooManyRequests:
			return fmt.Errorf("%w: stripe answered %d %s", provider.ErrNotSent, se.HTTPStatusCode, code)
		case se.HTTPStatusCode == http.StatusBadRequest || se.HTTPStatusCode == http.StatusNotFound ||
			se.HTTPStatusCode == http.StatusPaymentRequired:
			return &provider.Rejected{Code: "STRIPE_" + strings.ToUpper(nonEmpty(code, "invalid_request")), Message: se.Msg}
		}
		return fmt.Errorf("%w: stripe answered %d %s", provider.ErrAmbiguous, se.HTTPStatusCode, code)
	}
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
		return fmt.Errorf("%w: %w", provider.ErrNotSent, err)
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return fmt.Errorf("%w: %w", provider.ErrNotSent, err)
	}
	return fmt.Errorf("%w: %w", provider.ErrAmbiguous, err)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
