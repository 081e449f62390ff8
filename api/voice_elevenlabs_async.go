package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// ElevenLabs takes a late result as the answer of a tool it runs in the
// background (execution_mode "async": the conversation goes on while the
// webhook runs, and the answer reaches the agent when it arrives, within
// the tool's response_timeout_secs). oncecall exports its write tools that
// way, to /v1/elevenlabs/async/tools/{tool}: a call that would answer
// pending there waits for its action to settle, and answers the settled
// answer, the same one check_action_status gives, or pending when it has
// not settled by elevenLabsAsyncWait.

// elevenLabsAsyncWait is how long an async ElevenLabs tool call waits for
// its action to settle, from its arrival: under the exported
// response_timeout_secs (dashatool.ElevenLabsAsyncTimeoutSeconds).
const elevenLabsAsyncWait = time.Duration(dashatool.ElevenLabsAsyncTimeoutSeconds-10) * time.Second

// elevenLabsAsyncTool answers POST /v1/elevenlabs/async/tools/{tool}.
func (s *Server) elevenLabsAsyncTool(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	c, ok := s.elevenLabsCall(w, r)
	if !ok {
		return
	}
	tenant := tenantFrom(r.Context())
	ans, err := s.answerTool(r, tenant, c)
	if err == nil && ans.Outcome == string(oncecall.Pending) && ans.Reason != dashatool.NeedsOperator {
		// The answer is written after the server's usual write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(arrived.Add(elevenLabsAsyncWait + 10*time.Second))
		ans, err = s.settledAnswer(r, tenant, c, ans, arrived.Add(elevenLabsAsyncWait))
	}
	s.writeVoice(w, r, ans, err)
}

// settledAnswer waits, holding none of the tenant's database places, for
// a pending answer's action to settle by deadline (or the client to go
// away), and then answers the call again: the settled answer. pending is
// the answer when it does not settle in time.
func (s *Server) settledAnswer(r *http.Request, tenant oncecall.Tenant, c voiceCall, pending dashatool.Answer, deadline time.Time) (dashatool.Answer, error) {
	id, err := uuid.Parse(pending.ActionID)
	if err != nil {
		return pending, nil
	}
	// The request's budget has passed; the client's going away still ends
	// the wait.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), deadline)
	defer cancel()
	stop := context.AfterFunc(r.Context(), func() {
		if errors.Is(context.Cause(r.Context()), context.Canceled) {
			cancel()
		}
	})
	defer stop()
	seat := &infoFrom(r.Context()).seat
	seat.Free()
	for pause := 200 * time.Millisecond; ; pause = min(2*pause, 2*time.Second) {
		if !sleepCtx(ctx, pause) {
			return pending, nil
		}
		a, err := s.cfg.Store.ActionByID(ctx, tenant.ID, id)
		if err != nil {
			return pending, nil // the status tool still answers
		}
		if a.State == oncecall.Completed || a.NeedsOperator {
			break
		}
	}
	// Answered as the model asking again would be, within a budget of its
	// own and with a place in the tenant's share.
	again, done := context.WithTimeout(ctx, s.cfg.DashaBudget)
	defer done()
	if err := seat.Take(again); err != nil {
		return pending, nil
	}
	return s.answerTool(r.WithContext(again), tenant, c)
}

// sleepCtx pauses for d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
