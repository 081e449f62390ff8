package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/op"
)

// Late results. A voice tool call answered pending leaves the model to ask
// check_action_status. Where the platform can take a result later, oncecall
// also delivers it once the action settles: Vapi's Live Call Control, a
// POST of {"type": "add-message", "message": {"role": "system", ...}} to the
// call's monitor.controlUrl (taken from the call object of the tool-calls
// message). One delivery per action (late_results), the action id in the
// message, retried while the control URL fails, recorded in the action's
// timeline, and never once the call has ended (Vapi's end-of-call-report or
// status-update ended). The tool call's answer never waits for it.
const (
	// lateSettleWait bounds how long a delivery waits for its action to
	// settle: past it the call is long over or the model asked already.
	lateSettleWait = 15 * time.Minute
	// lateAttempts is how many times a failing control URL is tried.
	lateAttempts = 4
	// Timeline events of a late result.
	lateDelivered    = "late_result_delivered"
	lateNotDelivered = "late_result_not_delivered"
)

// vapiControlURL is the default check of a control URL oncecall may post
// to: https on vapi.ai or one of its subdomains, where Vapi's calls are
// controlled. A tenant's key must not make oncecall post anywhere else.
func vapiControlURL(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	return u.Scheme == "https" && (host == "vapi.ai" || strings.HasSuffix(host, ".vapi.ai"))
}

// lateControlURL returns the control URL a late result may go to, or ""
// when the call has none or one oncecall does not post to.
func (s *Server) lateControlURL(raw string) string {
	if raw == "" || len(raw) > 2048 {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return ""
	}
	allow := s.cfg.LateResultURL
	if allow == nil {
		allow = vapiControlURL
	}
	if !allow(u) {
		return ""
	}
	return u.String()
}

// deliverLate registers and starts the delivery of a pending answer's
// action to a call's control URL. It returns at once: the delivery runs
// on its own, past the request. A second registration of the same action
// (the model called again while it ran) starts nothing.
func (s *Server) deliverLate(ctx context.Context, tenant oncecall.Tenant, c voiceCall, controlURL string, ans dashatool.Answer) {
	id, err := uuid.Parse(ans.ActionID)
	if controlURL == "" || ans.Outcome != string(oncecall.Pending) || ans.Reason == dashatool.NeedsOperator || err != nil {
		return
	}
	// The answer's budget may be spent (a pending answer is one that ran
	// out of it): the registration has a moment of its own.
	reg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	fresh, err := s.cfg.Store.RegisterLateResult(reg, tenant.ID, id, c.Platform, c.CallID, controlURL)
	if err != nil {
		logFrom(ctx).Warn().Err(err).Str("action_id", ans.ActionID).Msg("late result not registered; the status tool still answers")
		return
	}
	if !fresh {
		return
	}
	log := *logFrom(ctx)
	go func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), lateSettleWait+time.Minute)
		defer cancel()
		if err := s.lateResult(bg, tenant, id, c.Tool, controlURL); err != nil {
			log.Warn().Err(err).Str("action_id", id.String()).Msg("late result")
		}
	}()
}

// lateResult waits for an action to settle, then adds its answer to the
// call's conversation, unless the call ends first.
func (s *Server) lateResult(ctx context.Context, tenant oncecall.Tenant, id uuid.UUID, tool, controlURL string) error {
	a, ended, err := s.awaitSettled(ctx, tenant, id)
	if err != nil {
		return err
	}
	if ended {
		return s.cfg.Store.AddEvent(ctx, id, lateNotDelivered, "", map[string]string{"reason": "call_ended"})
	}
	if a.State != oncecall.Completed && !a.NeedsOperator {
		return s.cfg.Store.AddEvent(ctx, id, lateNotDelivered, "", map[string]string{"reason": "not_settled"})
	}
	var phrases op.Phrases
	if o, ok := s.cfg.Ops.Get(a.Operation); ok {
		phrases = o.Phrases()
	}
	ans, err := s.speakable(ctx, tenant, a, true, dashatool.ForAction(a, phrases))
	if err != nil {
		return err
	}
	if ans, err = s.changed(ctx, ans, a, phrases); err != nil {
		return err
	}
	line, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	content := fmt.Sprintf("oncecall: the %s request with action_id %s has settled; this is its answer, the same one "+
		"check_action_status gives: %s Follow its say. If you already told the caller this outcome, do not repeat it; "+
		"do not call the tool again for it.", tool, id, line)
	msg, err := json.Marshal(map[string]any{
		"type":                   "add-message",
		"message":                map[string]string{"role": "system", "content": content},
		"triggerResponseEnabled": true,
	})
	if err != nil {
		return err
	}
	var last string
	for attempt := 1; attempt <= lateAttempts; attempt++ {
		if attempt > 1 {
			if !wait(ctx, time.Duration(attempt-1)*500*time.Millisecond) {
				return ctx.Err()
			}
		}
		// Never after the call ended, not even a retry.
		if ended, err := s.cfg.Store.LateResultCallEnded(ctx, tenant.ID, id); err != nil || ended {
			if err != nil {
				return err
			}
			return s.cfg.Store.AddEvent(ctx, id, lateNotDelivered, "", map[string]any{"reason": "call_ended", "attempts": attempt - 1})
		}
		status, err := postControl(ctx, controlURL, msg)
		if err == nil && status/100 == 2 {
			if err := s.cfg.Store.LateResultDelivered(ctx, tenant.ID, id); err != nil {
				return err
			}
			return s.cfg.Store.AddEvent(ctx, id, lateDelivered, "", map[string]any{"outcome": ans.Outcome, "attempts": attempt})
		}
		last = fmt.Sprintf("HTTP %d", status)
		if err != nil {
			last = "no answer"
		}
	}
	return s.cfg.Store.AddEvent(ctx, id, lateNotDelivered, "", map[string]any{"reason": "control_url_failed", "attempts": lateAttempts, "last": last})
}

// awaitSettled polls an action until it is completed or needs an operator,
// its call ends, or lateSettleWait passes.
func (s *Server) awaitSettled(ctx context.Context, tenant oncecall.Tenant, id uuid.UUID) (oncecall.Action, bool, error) {
	deadline := time.Now().Add(lateSettleWait)
	pause := 200 * time.Millisecond
	for {
		a, err := s.cfg.Store.ActionByID(ctx, tenant.ID, id)
		if err != nil {
			return a, false, err
		}
		if a.State == oncecall.Completed {
			// Not an answer a failover could take back.
			return a, false, s.cfg.Store.Replicated(ctx)
		}
		if a.NeedsOperator {
			return a, false, nil
		}
		ended, err := s.cfg.Store.LateResultCallEnded(ctx, tenant.ID, id)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return a, false, err
		}
		if ended || time.Now().After(deadline) {
			return a, ended, nil
		}
		if !wait(ctx, pause) {
			return a, false, ctx.Err()
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// wait pauses for d, or until ctx ends (false).
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lateClient posts to control URLs: short, and never following a redirect
// elsewhere.
var lateClient = &http.Client{
	Timeout:       5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func postControl(ctx context.Context, controlURL string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, controlURL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := lateClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
