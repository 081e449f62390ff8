package twilioprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twilio/twilio-go/client"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

const from = "+15005550006"

func newTwilio(t *testing.T, sim *simtest.Sim, public string) *twilioprovider.Provider {
	t.Helper()
	sid, token := sim.TwilioAccount()
	p, err := twilioprovider.New(twilioprovider.Config{
		AccountSID: sid, AuthToken: token, From: from, BaseURL: sim.URL, PublicURL: public, Timeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func smsWrite(n int, to, body string) provider.Write {
	payload, _ := json.Marshal(map[string]string{"channel": "sms", "recipient": to, "template": "generic", "body": body})
	return provider.Write{
		Capability: provider.Messaging, Key: fmt.Sprintf("oc-key-%d", n), ExternalRef: fmt.Sprintf("action-%d/messaging", n),
		Operation: twilioprovider.Operation, Payload: payload,
	}
}

func onlyMessage(t *testing.T, sim *simtest.Sim) providersim.TwilioMessage {
	t.Helper()
	l := sim.TwilioLedger()
	if len(l) != 1 {
		t.Fatalf("Twilio holds %d messages, want 1: %+v", len(l), l)
	}
	return l[0]
}

// A send creates one message with the step's StatusCallback; the record is
// its SID.
func TestTwilioSendCreatesOneMessageWithTheStepsCallback(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	p := newTwilio(t, sim, "https://oncecall.example/")
	w := smsWrite(1, "+15551230001", "Your table is booked.")
	rec, err := p.Write(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	m := onlyMessage(t, sim)
	want := "https://oncecall.example/v1/providers/twilio/status?step=action-1%2Fmessaging"
	if rec.ID != m.SID || m.To != "+15551230001" || m.From != from || m.Body != "Your table is booked." || m.StatusCallback != want {
		t.Fatalf("record %+v, message %+v; want one message with callback %s", rec, m, want)
	}
	if p.Traits().HonoursKeys || !p.Traits().AuthoritativeLookup || p.Traits().VisibilityDelay != twilioprovider.DefaultVisibilityDelay {
		t.Fatalf("traits = %+v, want keyless with authoritative lookups after the delay", p.Traits())
	}
}

// An answer lost after the message was created, or a 500 after it, is
// ambiguous, and the message is found again by recipient and text: one SMS.
func TestTwilioAmbiguousSendIsFoundAgainNotResent(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{providersim.FaultDropResponse, providersim.FaultFailAfterCommit} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, providersim.Config{Ledger: ""})
			p := newTwilio(t, sim, "")
			sim.Fault(providersim.Messaging, fault, 1)
			w := smsWrite(2, "+15551230002", "See you at 9.")
			_, err := p.Write(t.Context(), w)
			if provider.Classify(err) != "ambiguous" {
				t.Fatalf("write = %v, want ambiguous", err)
			}
			m := onlyMessage(t, sim)
			rec, found, err := p.Find(t.Context(), provider.Query{Write: w, Since: time.Now().Add(-time.Second)})
			if err != nil || !found || rec.ID != m.SID {
				t.Fatalf("find = %+v, %v, %v; want the message %s", rec, found, err, m.SID)
			}
			onlyMessage(t, sim)
		})
	}
}

// A message the lookups do not show yet is not found (the driver waits
// for the visibility delay); one another step holds is not this step's;
// the SID a callback named is checked first: its message is the step's if
// it went to the step's recipient from its sender since the claim,
// whatever Twilio made of its text.
func TestTwilioFindHonoursLagTakenAndTheCallbacksSID(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	p := newTwilio(t, sim, "")
	w := smsWrite(3, "+15551230003", "Your code is ready.")
	if _, err := sim.Admin.AddFault(t.Context(), providersim.Rule{Capability: providersim.Messaging, Fault: "lookup_lag=1h", Count: 1, On: providersim.OnWrite}); err != nil {
		t.Fatal(err)
	}
	sim.Fault(providersim.Messaging, providersim.FaultDropResponse, 1)
	if _, err := p.Write(t.Context(), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("write = %v, want ambiguous", err)
	}
	q := provider.Query{Write: w, Since: time.Now().Add(-time.Second)}
	if rec, found, err := p.Find(t.Context(), q); err != nil || found {
		t.Fatalf("find during the lag = %+v, %v, %v; want not found", rec, found, err)
	}
	w2 := smsWrite(4, "+15551230003", "Your code is ready.")
	first, err := p.Write(t.Context(), w2)
	if err != nil {
		t.Fatal(err)
	}
	q.Taken = func(_ context.Context, id string) (bool, error) { return id == first.ID, nil }
	if rec, found, err := p.Find(t.Context(), q); err != nil || found {
		t.Fatalf("find with the only visible match taken = %+v, %v, %v; want not found", rec, found, err)
	}
	elsewhere, err := p.Write(t.Context(), smsWrite(5, "+15551230099", "Your code is ready."))
	if err != nil {
		t.Fatal(err)
	}
	q.Taken, q.ProviderRef = nil, elsewhere.ID
	if rec, found, err := p.Find(t.Context(), q); err != nil || !found || rec.ID != first.ID {
		t.Fatalf("find with the SID of a message to another number = %+v, %v, %v; want the text's own match %s", rec, found, err, first.ID)
	}
	rewritten, err := p.Write(t.Context(), smsWrite(6, "+15551230003", "Your code is ready. Reply STOP to opt out."))
	if err != nil {
		t.Fatal(err)
	}
	q.ProviderRef = rewritten.ID
	if rec, found, err := p.Find(t.Context(), q); err != nil || !found || rec.ID != rewritten.ID {
		t.Fatalf("find with the SID of a message to the recipient = %+v, %v, %v; want it, %s", rec, found, err, rewritten.ID)
	}
	if n := len(sim.TwilioLedger()); n != 4 {
		t.Fatalf("Twilio holds %d messages, want 4", n)
	}
}

// Twilio's refusals are rejections (nothing sent); e-mail is not Twilio's;
// a wrong auth token is not sent.
func TestTwilioRefusalsAreRejectionsOrNotSent(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	p := newTwilio(t, sim, "")
	var rej *provider.Rejected
	if _, err := p.Write(t.Context(), smsWrite(6, "+1", "x")); !errors.As(err, &rej) || rej.Code != "TWILIO_21211" || strings.Contains(rej.Message, "+1") {
		t.Fatalf("invalid number = %v, want rejected TWILIO_21211 without the number", err)
	}
	sim.Fault(providersim.Messaging, "reject=UNSUBSCRIBED", 1)
	if _, err := p.Write(t.Context(), smsWrite(7, "+15551230007", "x")); !errors.As(err, &rej) || rej.Code != "TWILIO_21610" {
		t.Fatalf("unsubscribed = %v, want rejected TWILIO_21610", err)
	}
	email := smsWrite(8, "a@example.com", "x")
	email.Payload = json.RawMessage(`{"channel":"email","recipient":"a@example.com","body":"x"}`)
	if _, err := p.Write(t.Context(), email); !errors.As(err, &rej) || rej.Code != twilioprovider.UnsupportedChannel {
		t.Fatalf("email = %v, want rejected %s", err, twilioprovider.UnsupportedChannel)
	}
	sid, _ := sim.TwilioAccount()
	wrong, err := twilioprovider.New(twilioprovider.Config{AccountSID: sid, AuthToken: "wrongtoken", From: from, BaseURL: sim.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Write(t.Context(), smsWrite(9, "+15551230009", "x")); provider.Classify(err) != "not_sent" {
		t.Fatalf("wrong token = %v, want not sent", err)
	}
	if n := len(sim.TwilioLedger()); n != 0 {
		t.Fatalf("Twilio holds %d messages, want none", n)
	}
}

// The simulator signs its status callbacks as Twilio does: twilio-go's
// RequestValidator accepts them, and nothing else.
func TestTwilioSimulatorCallbacksVerifyWithTwilioGo(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	_, token := sim.TwilioAccount()
	var mu sync.Mutex
	var verified, forged int
	var statuses []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(b))
		params := map[string]string{}
		for k, v := range form {
			params[k] = v[0]
		}
		rv := client.NewRequestValidator(token)
		mu.Lock()
		defer mu.Unlock()
		if rv.Validate("https://oncecall.example"+r.URL.RequestURI(), params, r.Header.Get("X-Twilio-Signature")) {
			forged++ // signed for another URL: must not verify here
		}
		if rv.Validate("http://"+r.Host+r.URL.RequestURI(), params, r.Header.Get("X-Twilio-Signature")) {
			verified++
			statuses = append(statuses, form.Get("MessageStatus"))
		}
	}))
	defer srv.Close()
	p := newTwilio(t, sim, srv.URL)
	sim.SetTwilioCallbacks(providersim.TwilioCallbacks{Duplicate: true, BeforeAnswer: true})
	if _, err := p.Write(t.Context(), smsWrite(10, "+15551230010", "Signed.")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if verified != 4 || forged != 0 || strings.Join(statuses, ",") != "sent,sent,delivered,delivered" {
		t.Fatalf("verified %d (%v), forged %d; want 4 duplicated callbacks, sent then delivered", verified, statuses, forged)
	}
	if m := onlyMessage(t, sim); m.Callbacks != 4 {
		t.Fatalf("ledger counts %d callbacks, want 4", m.Callbacks)
	}
}

// A message Twilio still holds queued has no date_sent: it is found all
// the same, by when it was created, and never sent again.
func TestTwilioQueuedMessageIsFoundNotResent(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	sim.SetTwilioDelivery(providersim.TwilioDelivery{Queued: true})
	p := newTwilio(t, sim, "")
	sim.Fault(providersim.Messaging, providersim.FaultDropResponse, 1)
	w := smsWrite(11, "+15551230011", "Your table is booked.")
	if _, err := p.Write(t.Context(), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("write = %v, want ambiguous", err)
	}
	m := onlyMessage(t, sim)
	if m.Status != "queued" || m.DateSent != nil {
		t.Fatalf("message %+v, want queued without date_sent", m)
	}
	rec, found, err := p.Find(t.Context(), provider.Query{Write: w, Since: time.Now().Add(-time.Second)})
	if err != nil || !found || rec.ID != m.SID {
		t.Fatalf("find = %+v, %v, %v; want the queued message %s", rec, found, err, m.SID)
	}
}

// A message whose text Twilio rewrote (its link shortened) to the step's
// recipient from its sender, created since the claim, may be the step's:
// the search is no proof that the step's message does not exist.
func TestTwilioRewrittenMessageIsNoProofOfAbsence(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	sim.SetTwilioDelivery(providersim.TwilioDelivery{Queued: true, ShortenLinks: true})
	p := newTwilio(t, sim, "")
	sim.Fault(providersim.Messaging, providersim.FaultDropResponse, 1)
	w := smsWrite(12, "+15551230012", "Pay here: https://checkout.stripe.com/c/pay/cs_test_a1b2c3 thank you")
	if _, err := p.Write(t.Context(), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("write = %v, want ambiguous", err)
	}
	if m := onlyMessage(t, sim); strings.Contains(m.Body, "checkout.stripe.com") || m.DateSent != nil {
		t.Fatalf("message %+v, want its link shortened and no date_sent", m)
	}
	rec, found, err := p.Find(t.Context(), provider.Query{Write: w, Since: time.Now().Add(-time.Second)})
	if found || !errors.Is(err, provider.ErrLookalike) {
		t.Fatalf("find = %+v, %v, %v; want no evidence either way (%v)", rec, found, err, provider.ErrLookalike)
	}
	// Another recipient's message, or one from another sender, is not.
	other := smsWrite(13, "+15551230013", "Pay here: https://checkout.stripe.com/c/pay/cs_test_zz")
	if rec, found, err := p.Find(t.Context(), provider.Query{Write: other, Since: time.Now().Add(-time.Second)}); err != nil || found {
		t.Fatalf("find for another recipient = %+v, %v, %v; want not found", rec, found, err)
	}
	onlyMessage(t, sim)
}

// "Not found" is read from every page of Twilio's list, however many
// messages the recipient has from the sender.
func TestTwilioSearchReadsEveryPage(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	p := newTwilio(t, sim, "")
	twilioprovider.SetPageSize(p, 2)
	w := smsWrite(14, "+15551230014", "The first one.")
	first, err := p.Write(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := p.Write(t.Context(), smsWrite(15+i, "+15551230014", fmt.Sprintf("Later %d.", i))); err != nil {
			t.Fatal(err)
		}
	}
	taken := func(_ context.Context, id string) (bool, error) { return id != first.ID, nil }
	rec, found, err := p.Find(t.Context(), provider.Query{Write: w, Since: time.Now().Add(-time.Second), Taken: taken})
	if err != nil || !found || rec.ID != first.ID {
		t.Fatalf("find = %+v, %v, %v; want the oldest message %s, on the last page", rec, found, err, first.ID)
	}
}
