package api

import (
	"net/http"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
)

// dashaEventPayload is what oncecall reads of a Dasha result webhook (the
// agent's CompletedWebHookPayload or FailedWebHookPayload). Other fields and
// other payload types are tolerated and ignored.
type dashaEventPayload struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	CallID string `json:"callId"`
	OrgID  string `json:"orgId"`
}

// The result webhooks that end a call, and the timeline event each leaves
// on the call's unfinished actions.
var callEndings = map[string]string{
	"CompletedWebHookPayload": "dasha_call_completed",
	"FailedWebHookPayload":    "dasha_call_failed",
}

// dashaEventAnswer is the answer to a result webhook.
type dashaEventAnswer struct {
	// NudgedActions counts the call's unfinished actions whose open steps
	// were made due for the reconciler.
	NudgedActions int `json:"nudged_actions"`
}

// dashaEvent answers POST /v1/dasha/events, the optional receiver of a Dasha
// agent's result webhook. When a call completes or fails, the tenant's
// unfinished actions that the call claimed have their open steps made due
// now, so the reconciler settles them at its next pass instead of after its
// backoff. It does nothing else: no provider is called here, and the answer
// is quick. The orgId binding is enforced like on the tool routes.
func (s *Server) dashaEvent(w http.ResponseWriter, r *http.Request) {
	body, err := readRaw(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var p dashaEventPayload
	if err := decodeWebhook(body, &p, "a Dasha webhook payload"); err != nil {
		writeError(w, r, err)
		return
	}
	tenant := tenantFrom(r.Context())
	if err := checkOrg(tenant, p.OrgID); err != nil {
		writeError(w, r, err)
		return
	}
	event, ends := callEndings[p.Type]
	if !ends || p.CallID == "" || len(p.CallID) > 200 || idem.ValidateKey(p.CallID) != nil {
		writeJSON(w, http.StatusOK, dashaEventAnswer{})
		return
	}
	info := infoFrom(r.Context())
	info.callPlatform, info.callID = platformDasha, p.CallID
	n, err := s.cfg.Store.NudgeCall(r.Context(), tenant.ID, platformDasha, p.CallID, event)
	if err != nil {
		writeError(w, r, dashaError(db.Fault(err)))
		return
	}
	writeJSON(w, http.StatusOK, dashaEventAnswer{NudgedActions: n})
}
