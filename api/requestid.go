package api

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// maxRequestIDLen bounds a request id taken from the caller.
const maxRequestIDLen = 64

// safeRequestID drops a caller's X-Request-Id unless it is a short token of
// letters, digits and ._:- so that request ids (logged on every line) can
// carry neither customer data nor log-forging text; middleware.RequestID
// then generates one.
func safeRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(middleware.RequestIDHeader); id != "" && !safeID(id) {
			r.Header.Del(middleware.RequestIDHeader)
		}
		next.ServeHTTP(w, r)
	})
}

func safeID(id string) bool {
	if len(id) > maxRequestIDLen {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
