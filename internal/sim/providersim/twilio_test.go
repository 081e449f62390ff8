package providersim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// twilioCall is one request to the Twilio mode with its test account.
func twilioCall(t *testing.T, sim *simtest.Sim, method, path string, form url.Values) map[string]any {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, sim.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	sid, token := sim.TwilioAccount()
	req.SetBasicAuth(sid, token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d, %v", method, path, resp.StatusCode, err)
	}
	return out
}

// The Twilio mode answers as Twilio does: a queued message has a null
// date_sent and is in no DateSent filter; a shortened link is what Twilio
// stores; a list is paged, each page naming the next.
func TestTwilioModeQueuesShortensAndPages(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{Ledger: ""})
	sim.SetTwilioDelivery(providersim.TwilioDelivery{Queued: true, ShortenLinks: true})
	sid, _ := sim.TwilioAccount()
	messages := "/2010-04-01/Accounts/" + sid + "/Messages.json"
	for _, text := range []string{"first https://pay.example/a?x=1 ok", "second", "third"} {
		twilioCall(t, sim, http.MethodPost, messages, url.Values{"To": {"+15550001111"}, "From": {"+15005550006"}, "Body": {text}})
	}
	if got := twilioCall(t, sim, http.MethodGet, messages+"?To=%2B15550001111&DateSent%3E=2000-01-01T00:00:00Z", nil); len(got["messages"].([]any)) != 0 {
		t.Fatalf("DateSent> lists %v, want no message not sent yet", got["messages"])
	}
	var seen []map[string]any
	path := messages + "?To=%2B15550001111&PageSize=2"
	for path != "" {
		page := twilioCall(t, sim, http.MethodGet, path, nil)
		for _, m := range page["messages"].([]any) {
			seen = append(seen, m.(map[string]any))
		}
		next, _ := page["next_page_uri"].(string)
		path = next
	}
	if len(seen) != 3 || seen[0]["body"] != "third" || seen[2]["status"] != "queued" {
		t.Fatalf("pages list %v, want the three messages, newest first, queued", seen)
	}
	first := seen[2]
	if d, ok := first["date_sent"]; !ok || d != nil || first["date_created"] == "" {
		t.Fatalf("queued message %v, want date_created and a null date_sent", first)
	}
	if b := first["body"].(string); strings.Contains(b, "pay.example") || !strings.HasPrefix(b, "first https://") || !strings.HasSuffix(b, " ok") {
		t.Fatalf("stored body %q, want its link shortened", b)
	}
}
