package providersim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Admin calls a simulator's control and audit endpoints: set and clear
// faults, read the ledger. (The provider protocol itself has its own client,
// internal/provider/httpprovider.)
type Admin struct {
	// BaseURL is the simulator's base URL, e.g. "http://127.0.0.1:8090".
	BaseURL string
	// Token is sent as a bearer token when set.
	Token string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

// AddFault sets a fault rule and returns it with its id.
func (a Admin) AddFault(ctx context.Context, r Rule) (Rule, error) {
	var out Rule
	return out, a.do(ctx, http.MethodPost, "/control/faults", r, http.StatusCreated, &out)
}

// Fault sets one fault for the next count writes of a capability ("*" for
// all; count 0 until cleared).
func (a Admin) Fault(ctx context.Context, capability, fault string, count int) (Rule, error) {
	return a.AddFault(ctx, Rule{Capability: capability, Fault: fault, Count: count})
}

// Faults lists the fault rules still in effect.
func (a Admin) Faults(ctx context.Context) ([]Rule, error) {
	var out struct {
		Faults []Rule `json:"faults"`
	}
	err := a.do(ctx, http.MethodGet, "/control/faults", nil, http.StatusOK, &out)
	return out.Faults, err
}

// ClearFaults removes every fault rule.
func (a Admin) ClearFaults(ctx context.Context) error {
	return a.do(ctx, http.MethodDelete, "/control/faults", nil, http.StatusNoContent, nil)
}

// DeleteFault removes one fault rule.
func (a Admin) DeleteFault(ctx context.Context, id int64) error {
	return a.do(ctx, http.MethodDelete, "/control/faults/"+strconv.FormatInt(id, 10), nil, http.StatusNoContent, nil)
}

// Ledger lists the committed writes of one capability, or of all when
// capability is empty, oldest first.
func (a Admin) Ledger(ctx context.Context, capability string) ([]LedgerEntry, error) {
	path := "/ledger"
	if capability != "" {
		path += "?capability=" + url.QueryEscape(capability)
	}
	var out writeList[LedgerEntry]
	err := a.do(ctx, http.MethodGet, path, nil, http.StatusOK, &out)
	return out.Writes, err
}

// StripeLedger lists the Stripe mode's PaymentIntents with their capture
// counts.
func (a Admin) StripeLedger(ctx context.Context) ([]StripePaymentIntent, error) {
	var out struct {
		PaymentIntents []StripePaymentIntent `json:"payment_intents"`
	}
	err := a.do(ctx, http.MethodGet, "/stripe/ledger", nil, http.StatusOK, &out)
	return out.PaymentIntents, err
}

func (a Admin) do(ctx context.Context, method, path string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.BaseURL+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// TwilioLedger lists the Twilio mode's messages, oldest first, with how
// many status callbacks each one had delivered.
func (a Admin) TwilioLedger(ctx context.Context) ([]TwilioMessage, error) {
	var out struct {
		Messages []TwilioMessage `json:"messages"`
	}
	err := a.do(ctx, http.MethodGet, "/twilio/ledger", nil, http.StatusOK, &out)
	return out.Messages, err
}

// TwilioCallbacks sets the Twilio mode's callback faults.
func (a Admin) TwilioCallbacks(ctx context.Context, c TwilioCallbacks) error {
	return a.do(ctx, http.MethodPost, "/twilio/callbacks", c, http.StatusOK, nil)
}

// TwilioDelivery sets what becomes of the Twilio mode's later messages
// (kept queued, links shortened).
func (a Admin) TwilioDelivery(ctx context.Context, d TwilioDelivery) error {
	return a.do(ctx, http.MethodPost, "/twilio/delivery", d, http.StatusOK, nil)
}

// TwilioStrayCallback makes the Twilio mode post a signed callback about a
// message it never created to target; it returns the receiver's status.
func (a Admin) TwilioStrayCallback(ctx context.Context, target string) (int, error) {
	var out struct {
		Status int `json:"status"`
	}
	err := a.do(ctx, http.MethodPost, "/twilio/stray-callback", map[string]string{"url": target}, http.StatusOK, &out)
	return out.Status, err
}
