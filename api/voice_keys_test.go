package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// A request that carries two different API keys, one in Authorization and
// one in the platform's own header, is refused (400) whichever tenant
// either belongs to, and claims nothing; the same key in both is one key.
func TestVoiceRequestWithTwoDifferentKeysIsRefused(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	other, otherKey := d.Tenant("second")
	for i, p := range voicePlatforms {
		if p.secret == "" {
			continue
		}
		body := voicePayload(t, p.sample, d.bookFill(p.name+"-two-keys", d.customer, d.Slot(d.tenant, 10+i)))
		before := d.Count("SELECT count(*) FROM actions")
		for name, auth := range map[string][]string{
			"another tenant's key in Authorization": {"Authorization", "Bearer " + otherKey},
			"a forged key in Authorization":         {"Authorization", "Bearer forged-" + d.key},
			"another scheme in Authorization":       {"Authorization", "Basic " + d.key},
		} {
			r := d.Post(p.path, "", "", body, append(auth, p.secret, d.key)...)
			if r.Status != http.StatusBadRequest || !strings.Contains(r.JSON(t)["detail"].(string), p.secret) {
				t.Errorf("%s: %s and %s: %d %s, want 400 naming %[3]s", p.name, name, p.secret, r.Status, r.Body)
			}
		}
		if n := d.Count("SELECT count(*) FROM actions"); n != before {
			t.Fatalf("%s: requests with two keys claimed %d actions", p.name, n-before)
		}
		a := p.answer(t, d.Post(p.path, d.key, "", body, p.secret, d.key))
		if a.Outcome != "confirmed" {
			t.Fatalf("%s: the same key in Authorization and %s: %+v", p.name, p.secret, a)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", other.ID); n != 0 {
		t.Fatalf("the other tenant has %d actions", n)
	}
}
