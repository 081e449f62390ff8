package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider/twilioprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// The Twilio status route exists only when messaging is Twilio (an auth
// token is configured), refuses a callback its X-Twilio-Signature does not
// verify for the public URL (401) and acknowledges verified callbacks
// about messages oncecall does not know without changing anything.
func TestTwilioStatusVerifiesTheSignatureAndChangesNothingForUnknownMessages(t *testing.T) {
	t.Parallel()
	const token, public = "twiliotoken1", "https://oncecall.example/base"
	e := apptest.Start(t, func(c *app.Config) { c.TwilioAuthToken, c.PublicURL = token, public })
	query := url.Values{twilioprovider.StepParam: {uuid.NewString() + "/messaging"}}.Encode()
	path := twilioprovider.StatusPath + "?" + query
	form := url.Values{"MessageSid": {"SM0123"}, "MessageStatus": {"delivered"}, "AccountSid": {"ACtest"}}
	post := func(path string, form url.Values, sig string) apptest.Response {
		return e.Request(http.MethodPost, path, "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded", "X-Twilio-Signature", sig)
	}
	for name, sig := range map[string]string{
		"forged":      providersim.TwilioSignature("othertoken", public+path, form),
		"another URL": providersim.TwilioSignature(token, "https://elsewhere.example"+path, form),
		"missing":     "",
	} {
		if r := post(path, form, sig); r.Status != http.StatusUnauthorized || r.JSON(t)["code"] != "UNAUTHORIZED" {
			t.Errorf("%s signature: %d %s, want 401 UNAUTHORIZED", name, r.Status, r.Body)
		}
	}
	tampered := url.Values{"MessageSid": {"SM9999"}, "MessageStatus": {"delivered"}, "AccountSid": {"ACtest"}}
	if r := post(path, tampered, providersim.TwilioSignature(token, public+path, form)); r.Status != http.StatusUnauthorized {
		t.Errorf("a signature of other parameters: %d, want 401", r.Status)
	}
	for _, p := range []string{path, twilioprovider.StatusPath, twilioprovider.StatusPath + "?step=not-a-step"} {
		r := post(p, form, providersim.TwilioSignature(token, public+p, form))
		if got := r.JSON(t); r.Status != http.StatusOK || got["received"] != true || got["matched"] != false {
			t.Errorf("verified callback about an unknown message at %s: %d %s, want 200 unmatched", p, r.Status, r.Body)
		}
	}
	if n := e.Count("SELECT count(*) FROM action_events"); n != 0 {
		t.Fatalf("callbacks wrote %d timeline events, want none", n)
	}
	off := apptest.Start(t)
	if r := off.Request(http.MethodPost, path, "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded",
		"X-Twilio-Signature", providersim.TwilioSignature(token, public+path, form)); r.Status != http.StatusNotFound && r.Status != http.StatusUnauthorized {
		t.Fatalf("without Twilio the route answered %d", r.Status)
	}
}
