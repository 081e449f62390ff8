package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/op"
)

// lateWorker sends the late results the outbox queued (db.LateJob): one
// job per call that heard pending and action, worked by River's bounded
// pool on whichever replica fetches it, retried with backoff while the
// control URL fails, never once the call has ended.
type lateWorker struct {
	river.WorkerDefaults[db.LateJob]
	s *Server
}

var _ river.Worker[db.LateJob] = (*lateWorker)(nil)

// lateBusyPause is how long a delivery that found the server's database
// places taken waits before its next try (not counted as an attempt).
const lateBusyPause = time.Second

// Timeout bounds one try: the reads and a POST of at most lateClient's 5s.
func (w *lateWorker) Timeout(*river.Job[db.LateJob]) time.Duration { return 30 * time.Second }

// NextRetry spaces the tries a little (1, 2, 4, 8 s...): a call lasts
// minutes, so River's default backoff (attempt^4 seconds) would be too
// late.
func (w *lateWorker) NextRetry(j *river.Job[db.LateJob]) time.Time {
	return time.Now().Add(time.Duration(1<<min(j.Attempt-1, 6)) * time.Second)
}

// Work delivers one late result.
func (w *lateWorker) Work(ctx context.Context, j *river.Job[db.LateJob]) error {
	s, job := w.s, j.Args
	sub, err := s.cfg.Store.LateSubscriber(ctx, job)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil // the action was pruned with its subscriptions
	case err != nil:
		return err
	case sub.Delivered:
		return nil
	case sub.Ended:
		// Never after the call ended, not even a retry.
		return s.cfg.Store.AddEvent(ctx, job.ActionID, lateNotDelivered, "", lateDetail(job, "call_ended", j.Attempt-1))
	}
	// Under the server's admission control, like a request of the tenant.
	st := seat{gate: s.gate, tenant: job.TenantID, server: s.server}
	if err := st.Take(ctx); err != nil {
		return river.JobSnooze(lateBusyPause)
	}
	defer st.Free()
	msg, outcome, err := s.lateMessage(ctx, job, sub.Tool)
	if err != nil {
		return err
	}
	status, err := postControl(ctx, sub.ControlURL, msg)
	if err == nil && status/100 == 2 {
		if _, err := s.cfg.Store.LateDelivered(ctx, job); err != nil {
			return err
		}
		d := lateDetail(job, "", j.Attempt)
		d["outcome"] = outcome
		return s.cfg.Store.AddEvent(ctx, job.ActionID, lateDelivered, "", d)
	}
	last := fmt.Sprintf("HTTP %d", status)
	if err != nil {
		last = "no answer"
	}
	if j.Attempt >= j.MaxAttempts {
		d := lateDetail(job, "control_url_failed", j.Attempt)
		d["last"] = last
		if err := s.cfg.Store.AddEvent(ctx, job.ActionID, lateNotDelivered, "", d); err != nil {
			return err
		}
	}
	return fmt.Errorf("control URL of call %s: %s", job.CallID, last)
}

// lateDetail is a late result's timeline entry: the call it was for, why
// it was not delivered (reason, when it was not) and the tries.
func lateDetail(job db.LateJob, reason string, attempts int) map[string]any {
	d := map[string]any{"call_platform": job.CallPlatform, "call_id": job.CallID, "attempts": attempts}
	if reason != "" {
		d["reason"] = reason
	}
	return d
}

// lateMessage is the add-message of a settled action's answer, naming the
// tool the call asked about, and the answer's outcome.
func (s *Server) lateMessage(ctx context.Context, job db.LateJob, tool string) ([]byte, string, error) {
	a, err := s.cfg.Store.ActionByID(ctx, job.TenantID, job.ActionID)
	if err != nil {
		return nil, "", err
	}
	if a.State != oncecall.Completed {
		// Only a settling transaction queues a delivery: not reached.
		return nil, "", fmt.Errorf("action %s is %s, not settled", a.ID, a.State)
	}
	// Not an answer a failover could take back.
	if err := s.cfg.Store.Replicated(ctx); err != nil {
		return nil, "", err
	}
	tenant, err := s.cfg.Store.TenantByID(ctx, job.TenantID)
	if err != nil {
		return nil, "", err
	}
	var phrases op.Phrases
	if o, ok := s.cfg.Ops.Get(a.Operation); ok {
		phrases = o.Phrases()
	}
	ans, err := s.speakable(ctx, tenant, a, true, dashatool.ForAction(a, phrases))
	if err != nil {
		return nil, "", err
	}
	if ans, err = s.changed(ctx, ans, a, phrases); err != nil {
		return nil, "", err
	}
	line, err := json.Marshal(ans)
	if err != nil {
		return nil, "", err
	}
	content := fmt.Sprintf("oncecall: the %s request with action_id %s has settled; this is its answer, the same one "+
		"check_action_status gives: %s Follow its say. If you already told the caller this outcome, do not repeat it; "+
		"do not call the tool again for it.", tool, a.ID, line)
	msg, err := json.Marshal(map[string]any{
		"type":                   "add-message",
		"message":                map[string]string{"role": "system", "content": content},
		"triggerResponseEnabled": true,
	})
	return msg, ans.Outcome, err
}
