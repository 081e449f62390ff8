package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/oncecall/oncecall/internal/fault"
)

// serveMetrics serves /metrics, requiring the metrics token as a Bearer
// token when one is configured.
func (s *Server) serveMetrics() http.Handler {
	h := s.cfg.Metrics.Handler()
	if s.cfg.MetricsToken == "" {
		return h
	}
	want := sha256.Sum256([]byte(s.cfg.MetricsToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="oncecall-metrics"`)
			writeError(w, r, fault.New(fault.Unauthorized, "the metrics token is required: Authorization: Bearer <token>"))
			return
		}
		h.ServeHTTP(w, r)
	})
}
