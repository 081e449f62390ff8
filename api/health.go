package api

import (
	"context"
	"net/http"
	"time"

	"github.com/oncecall/oncecall/db"
)

func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready when the database answers and every migration is applied.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	ok, err := db.Applied(ctx, s.cfg.Store.Pool())
	switch {
	case err != nil:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "database unavailable"})
	case !ok:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "migrations not applied"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}
