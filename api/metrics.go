package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/oncecall/oncecall/internal/fault"
)

// countRequests records every answered request's route, method, status and
// latency. It sits inside the access log and outside the recoverer, so a
// panic is counted as the 500 it became.
func (s *Server) countRequests(next http.Handler) http.Handler {
	m := s.cfg.Metrics
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := ""
		if rc := chi.RouteContext(r.Context()); rc != nil {
			route = rc.RoutePattern()
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK // the handler wrote nothing: net/http answers 200
		}
		m.Request(route, r.Method, status, time.Since(start))
	})
}

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
