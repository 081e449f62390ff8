package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
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
			if status, detail := refusalOf(t, p.name, r); status != http.StatusBadRequest || !strings.Contains(detail, p.secret) {
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

// Keys that differ only in case from a field a Vapi message or a Retell
// call object is read by ("Function" next to "function") are refused as
// Dasha's are, at every depth: encoding/json would read either one.
func TestVoiceEnvelopesRefuseFieldNamesDifferingOnlyInCase(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	other := d.Slot(d.tenant, 2)
	book := func(slot uuid.UUID) string {
		return `{"name":"book_appointment","arguments":{"customer_id":"` + d.customer.String() + `","slot_id":"` + slot.String() + `"}}`
	}
	vapi := func(message string) string { return `{"message":{` + message + `}}` }
	for name, c := range map[string]struct{ path, body, field string }{
		"vapi function": {"/v1/vapi/webhook", vapi(`"type":"tool-calls","call":{"id":"case-1"},"toolCallList":[{"id":"t1","function":` +
			book(d.slot) + `,"Function":` + book(other) + `}]`), "message.toolCallList.Function"},
		"vapi toolCallList": {"/v1/vapi/webhook", vapi(`"type":"tool-calls","call":{"id":"case-2"},"toolCallList":[{"id":"t1","function":` +
			book(d.slot) + `}],"ToolCallList":[{"id":"t2","function":` + book(other) + `}]`), "message.ToolCallList"},
		"vapi call id": {"/v1/vapi/webhook", vapi(`"type":"tool-calls","call":{"id":"case-3","ID":"case-4"},"toolCallList":[{"id":"t1","function":` +
			book(d.slot) + `}]`), "message.call.ID"},
		"vapi customer number": {"/v1/vapi/webhook", vapi(`"type":"tool-calls","call":{"id":"case-5","customer":{"number":"+14155550100","Number":"+14155550101"}},` +
			`"toolCallList":[{"id":"t1","name":"find_customer","arguments":{}}]`), "message.call.customer.Number"},
		"vapi type": {"/v1/vapi/webhook", vapi(`"type":"status-update","Type":"end-of-call-report","call":{"id":"case-6"}`), "message.Type"},
		"retell call id": {"/v1/retell/functions/book_appointment", `{"name":"book_appointment","call":{"call_id":"case-7","Call_id":"case-8"},` +
			`"args":{"customer_id":"` + d.customer.String() + `","slot_id":"` + d.slot.String() + `"}}`, "call.Call_id"},
	} {
		r := d.Post(c.path, d.key, "", c.body)
		if r.Status != http.StatusBadRequest || r.JSON(t)["field"] != c.field {
			t.Errorf("%s: %d %s, want 400 naming %s", name, r.Status, r.Body, c.field)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("refused messages claimed %d actions", n)
	}
}

// A key can be limited to one voice platform: a retell key opens only the
// Retell routes, so a tenant that requires Retell's signature cannot be
// called with that key, unsigned, on another platform's routes. A voice key
// opens every platform's routes, a dasha key only Dasha's; none opens the
// REST API, and each 403 says which routes the key opens.
func TestVoiceKeyScopedToOnePlatform(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	keys := map[string]string{}
	for _, scope := range []string{"dasha", "vapi", "retell", "elevenlabs", "voice"} {
		k, err := d.Store.AddScopedAPIKey(t.Context(), d.tenant, oncecall.Scope(scope))
		if err != nil {
			t.Fatalf("a key of scope %s: %v", scope, err)
		}
		keys[scope] = k
	}
	const retellKey = "key_retell_scope_test"
	if err := d.Store.SetRetellKey(t.Context(), d.tenant, retellKey); err != nil {
		t.Fatal(err)
	}
	routes := map[string]string{
		"dasha": "/v1/dasha/", "vapi": "/v1/vapi/", "retell": "/v1/retell/", "elevenlabs": "/v1/elevenlabs/",
	}
	slot := 1
	send := func(platform, key string) (int, string) {
		t.Helper()
		slot++
		f := d.bookFill(platform+"-scoped-"+uuid.NewString()[:6], d.customer, d.Slot(d.tenant, slot))
		switch platform {
		case "dasha":
			r := d.Post("/v1/dasha/tools/book_appointment", key, "", payload("book_appointment", f["CALL"], d.bookArgs(uuid.MustParse(f["SLOT"]))))
			return r.Status, string(r.Body)
		case "retell":
			body := voicePayload(t, "retell_function.json", f)
			r := d.Post("/v1/retell/functions/book_appointment", key, "", body, "X-Retell-Signature", retellSign(retellKey, body, time.Now()))
			return r.Status, string(r.Body)
		}
		for _, p := range voicePlatforms {
			if p.name == platform {
				return refusalOf(t, platform, d.Post(p.path, key, "", voicePayload(t, p.sample, f)))
			}
		}
		t.Fatalf("no platform %s", platform)
		return 0, ""
	}
	served := 0
	for scope, key := range keys {
		for platform, route := range routes {
			opens := scope == "voice" || scope == platform
			status, body := send(platform, key)
			if status == http.StatusOK {
				served++
			}
			switch {
			case opens && status != http.StatusOK:
				t.Errorf("a %s key on %s: %d %s, want 200", scope, route, status, body)
			case !opens && (status != http.StatusForbidden || !strings.Contains(body, "scope "+scope)):
				t.Errorf("a %s key on %s: %d %s, want 403 naming the scope", scope, route, status, body)
			case !opens && scope != "voice" && !strings.Contains(body, routes[scope]):
				t.Errorf("a %s key's 403 does not name %s: %s", scope, routes[scope], body)
			}
		}
		r := d.Get("/v1/slots", key)
		if r.Status != http.StatusForbidden {
			t.Errorf("a %s key on the REST API: %d %s", scope, r.Status, r.Body)
		}
		detail, _ := r.JSON(t)["detail"].(string)
		for platform, route := range routes {
			if (scope == "voice" || scope == platform) != strings.Contains(detail, route) {
				t.Errorf("a %s key's 403 on the REST API names the routes it opens wrongly: %s", scope, detail)
			}
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != served {
		t.Fatalf("%d actions for %d calls served: refused calls claimed some", n, served)
	}
}
