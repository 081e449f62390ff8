package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
)

// retellSignatureWindow is how far a signature's timestamp may be from now,
// as Retell's SDKs check it.
const retellSignatureWindow = 5 * time.Minute

var retellSignaturePattern = regexp.MustCompile(`^v=(\d{1,15}),d=([0-9a-f]{64})$`)

// checkRetellSignature requires a valid X-Retell-Signature when the tenant
// has a Retell key configured: "v=<unix ms>,d=<hex HMAC-SHA256 of the body
// followed by that timestamp, keyed with the Retell API key>", within five
// minutes of now. A tenant without a Retell key is authenticated by its
// Bearer key alone. A missing or wrong signature is 401, nothing claimed.
func (s *Server) checkRetellSignature(w http.ResponseWriter, r *http.Request, tenant oncecall.Tenant, body []byte) error {
	key, err := s.cfg.Store.RetellKey(r.Context(), tenant.ID)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return db.Fault(err)
	}
	if !retellSignatureValid(body, key, r.Header.Get("X-Retell-Signature"), time.Now()) {
		w.Header().Set("WWW-Authenticate", `RetellSignature realm="oncecall"`)
		return fault.New(fault.Unauthorized, "this tenant requires a valid X-Retell-Signature on Retell function calls")
	}
	return nil
}

func retellSignatureValid(body []byte, key, header string, now time.Time) bool {
	m := retellSignaturePattern.FindStringSubmatch(header)
	if m == nil {
		return false
	}
	ms, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.UnixMilli(ms)); d > retellSignatureWindow || d < -retellSignatureWindow {
		return false
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	mac.Write([]byte(m[1]))
	want := mac.Sum(nil)
	got, err := hex.DecodeString(m[2])
	return err == nil && hmac.Equal(got, want)
}
