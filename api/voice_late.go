package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// Late results. A voice tool call answered pending leaves the model to ask
// check_action_status. Where the platform can take a result later, oncecall
// also delivers it once the action settles: Vapi's Live Call Control, a
// POST of {"type": "add-message", "message": {"role": "system", ...}} to the
// call's monitor.controlUrl (taken from the call object of the tool-calls
// message). Every call that heard pending for the action gets it once
// (late_results, one row per action and call; a River job each, queued by
// the settling transaction), with the action id and the tool it asked
// about, retried while the control URL fails, recorded in the action's
// timeline, and never once the call has ended (Vapi's end-of-call-report or
// status-update ended, /v1/dasha/events). The tool call's answer never
// waits for it.
const (
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

// deliverLate makes the call that heard a pending answer a subscriber of
// the action's late result, when its platform gave a control URL oncecall
// may post to. It starts nothing: the transaction that settles the action
// queues a delivery job for every live subscriber (db.Tx.ResolveAction),
// and River's workers send it (lateWorker). A second answer to the same
// call for the same action subscribes nothing more.
func (s *Server) deliverLate(ctx context.Context, tenant oncecall.Tenant, c voiceCall, controlURL string, ans dashatool.Answer) {
	id, err := uuid.Parse(ans.ActionID)
	if controlURL == "" || ans.Outcome != string(oncecall.Pending) || ans.Reason == dashatool.NeedsOperator || err != nil {
		return
	}
	// The answer's budget may be spent (a pending answer is one that ran
	// out of it): the subscription has a moment of its own.
	reg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	tool, err := s.lateTool(reg, tenant, id, c.Tool)
	if err == nil {
		_, err = s.cfg.Store.SubscribeLate(reg, db.LateSubscriber{
			TenantID: tenant.ID, ActionID: id, CallPlatform: c.Platform, CallID: c.CallID, Tool: tool, ControlURL: controlURL,
		})
	}
	if err != nil {
		logFrom(ctx).Warn().Err(err).Str("action_id", ans.ActionID).Msg("late result not registered; the status tool still answers")
	}
}

// lateTool is the tool a late result names: the one the call asked, unless
// it asked a read-only tool (check_action_status) about the action, whose
// own tool is then the one the caller's request was made with, whatever
// platform made it.
func (s *Server) lateTool(ctx context.Context, tenant oncecall.Tenant, id uuid.UUID, asked string) (string, error) {
	if !dashatool.ReadOnly(asked) {
		return asked, nil
	}
	a, err := s.cfg.Store.ActionByID(ctx, tenant.ID, id)
	if err != nil {
		return "", err
	}
	if o, ok := s.cfg.Ops.Get(a.Operation); ok && o.Tool() != "" {
		return o.Tool(), nil
	}
	return a.Operation, nil
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
