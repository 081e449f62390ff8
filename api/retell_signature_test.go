package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// retellSign signs a body as Retell's SDKs do: "v=<unix ms>,d=<hex
// HMAC-SHA256(key, body + ms)>".
func retellSign(key, body string, at time.Time) string {
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(body + ms))
	return "v=" + ms + ",d=" + hex.EncodeToString(mac.Sum(nil))
}

// A tenant with a Retell key takes only Retell function calls signed with
// it: a missing, forged, stale or other-body signature is 401 with nothing
// claimed; a signed call and its signed retry are one appointment.
func TestRetellSignatureIsCheckedWhenTheTenantHasARetellKey(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	const retellKey = "key_retell_webhook_test"
	if err := d.Store.SetRetellKey(t.Context(), d.tenant, retellKey); err != nil {
		t.Fatal(err)
	}
	body := voicePayload(t, "retell_function.json", d.bookFill("retell-signed", d.customer, d.slot))
	path := "/v1/retell/functions/book_appointment"
	now := time.Now()
	for name, sig := range map[string]string{
		"missing":    "",
		"forged":     retellSign("key_someone_else", body, now),
		"stale":      retellSign(retellKey, body, now.Add(-10*time.Minute)),
		"other body": retellSign(retellKey, body+" ", now),
		"malformed":  "d=abc,v=1",
	} {
		var h []string
		if sig != "" {
			h = []string{"X-Retell-Signature", sig}
		}
		if r := d.Post(path, d.key, "", body, h...); r.Status != http.StatusUnauthorized {
			t.Errorf("%s signature: %d %s", name, r.Status, r.Body)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("refused calls claimed %d actions", n)
	}
	first := decodeAnswer(t, d.Post(path, d.key, "", body, "X-Retell-Signature", retellSign(retellKey, body, now)))
	retry := decodeAnswer(t, d.Post(path, d.key, "", body, "X-Retell-Signature", retellSign(retellKey, body, time.Now())))
	if first.Outcome != "confirmed" || retry.ActionID != first.ActionID || retry.Say != first.Say {
		t.Fatalf("signed call %+v, signed retry %+v", first, retry)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	// Without the Retell key the Bearer key alone is enough again.
	if _, err := d.Store.DeleteRetellKey(t.Context(), d.tenant); err != nil {
		t.Fatal(err)
	}
	if r := d.Post(path, d.key, "", body); r.Status != http.StatusOK {
		t.Fatalf("after removing the Retell key: %d %s", r.Status, r.Body)
	}
}
