package api

import (
	"context"
	"net/http"
	"time"
)

// budgetMargin is kept free at the end of a tool call's budget for
// answering, so a wait that uses the rest of the budget still answers in
// time.
const budgetMargin = 500 * time.Millisecond

// voiceBudget gives a voice platform's tool call or event (a middleware of
// each voice sub-router, see voiceRouter) its time budget from before
// authentication: everything it waits for (its tenant's turn, a concurrent
// attempt of the same action, the database, a remote provider) ends by the
// budget's deadline, so the answer arrives within the platform's webhook
// limit. The budget, DashaBudget (8s by default), is below every
// platform's tool timeout (Dasha 10s, Vapi and ElevenLabs 20s by default).
// A remote write still running at the deadline goes on without the request
// (see idem.Core's drive) and the call answers pending.
func (s *Server) voiceBudget(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DashaBudget)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// dashaWait is how long a tool call may wait for a running attempt of the
// same action: DashaWait, shortened so that the answer still fits in what
// is left of the call's budget.
func (s *Server) dashaWait(ctx context.Context) time.Duration {
	wait := s.cfg.DashaWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline)-budgetMargin)
	}
	return max(wait, time.Millisecond)
}
