package api

import (
	"net/http"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/message"
)

// listTemplates answers GET /v1/message-templates: every template the tenant
// can send, with the newest version of its own.
func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	ts, err := message.ListTemplates(r.Context(), s.cfg.Store, tenantFrom(r.Context()).ID)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"templates": ts})
}
