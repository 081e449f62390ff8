package calendars

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

// FuzzNotices: whatever a notification holds, none is taken unless it
// carries the secret (Google, Graph) or is signed with it (Cal.com), and
// reading one never panics.
func FuzzNotices(f *testing.F) {
	const secret = "s3cret"
	body := `{"triggerEvent":"BOOKING_CREATED","payload":{"eventTypeId":4242}}`
	f.Add(body, CalcomSign(secret, []byte(body)), "s3cret", "exists", "https://x/calendars/a%40b/events")
	f.Add(`{"value":[{"clientState":"s3cret","resource":"Users/a/Events/b"}]}`, "", "", "sync", "::")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, body, sig, token, state, uri string) {
		h := http.Header{}
		h.Set(CalcomSignature, sig)
		h.Set(GoogleChannelID, "c")
		h.Set(GoogleChannelToken, token)
		h.Set(GoogleResourceState, state)
		h.Set(GoogleResourceURI, uri)
		n := Notification{Header: h, Query: url.Values{}, Body: []byte(body)}
		if _, err := calcomNotice(n, secret); err == nil && sig != CalcomSign(secret, []byte(body)) {
			t.Fatalf("cal.com: taken with signature %q of %q", sig, body)
		}
		if _, err := googleNotice(n, secret); err == nil && token != secret {
			t.Fatalf("google: taken with token %q", token)
		}
		if echo, _, err := graphNotice(n, secret); err == nil && echo == "" && !allSecret(body, secret) {
			t.Fatalf("graph: taken without the clientState: %q", body)
		}
	})
}

// allSecret reports whether every notification of a Graph body carries
// the secret as its clientState.
func allSecret(body, secret string) bool {
	var b GraphNotifications
	if json.Unmarshal([]byte(body), &b) != nil || len(b.Value) == 0 {
		return false
	}
	for _, v := range b.Value {
		if v.ClientState != secret {
			return false
		}
	}
	return true
}
