package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/providersim"
)

// Report is what a chaos run found.
type Report struct {
	// Actions are the logical actions the fleet started; Attempts their
	// write requests (first tries and retries), Polls their status checks.
	Actions, Attempts, Polls int
	// Kills counts replicas SIGKILLed; PGRestarts PostgreSQL restarts.
	Kills, PGRestarts int

	// Duplicates: logical actions with more than one provider write for
	// one step.
	Duplicates int
	// Lost: logical actions a caller was told confirmed without exactly one
	// provider write for the required step.
	Lost int
	// FalseConfirmations: logical actions a caller was told confirmed whose
	// action ends rejected or has no provider write.
	FalseConfirmations int
	// NeedsOperator and StillUnknown count actions left for an operator,
	// and unfinished actions not flagged for one, after the settle.
	NeedsOperator, StillUnknown int

	// Contradictions: a caller told both confirmed and rejected, or told
	// rejected while the provider holds the write.
	Contradictions int
	// Unattributed: provider writes no logical action of the fleet asked for.
	Unattributed int
	// ProtocolErrors: answers a well-behaved caller cannot act on (a 4xx
	// other than a business rejection, a malformed body).
	ProtocolErrors int
	// OpenFollowUps: follow-up steps (booking confirmations) not finished
	// after the settle.
	OpenFollowUps int

	// What callers last heard, by logical action; Unanswered never got an
	// answer with an action id (every attempt failed).
	Confirmed, Rejected, Pending, Unanswered int
	// Writes are the provider's committed writes.
	Writes int

	// Problems describes the first anomalies found, for investigation.
	Problems []string
}

// OK reports whether the run kept every promise: no duplicate, nothing lost,
// no false confirmation, and nothing else a caller could be misled by.
func (r Report) OK() bool {
	return r.Duplicates == 0 && r.Lost == 0 && r.FalseConfirmations == 0 &&
		r.Contradictions == 0 && r.Unattributed == 0 && r.ProtocolErrors == 0
}

// String is the summary line.
func (r Report) String() string {
	return fmt.Sprintf("chaos: actions=%d attempts=%d kills=%d duplicates=%d lost=%d false_confirmations=%d needs_operator=%d still_unknown=%d",
		r.Actions, r.Attempts, r.Kills, r.Duplicates, r.Lost, r.FalseConfirmations, r.NeedsOperator, r.StillUnknown)
}

// Details is the line of further figures.
func (r Report) Details() string {
	return fmt.Sprintf("chaos: told confirmed=%d rejected=%d pending=%d unanswered=%d polls=%d provider_writes=%d "+
		"pg_restarts=%d contradictions=%d unattributed=%d protocol_errors=%d open_follow_ups=%d",
		r.Confirmed, r.Rejected, r.Pending, r.Unanswered, r.Polls, r.Writes,
		r.PGRestarts, r.Contradictions, r.Unattributed, r.ProtocolErrors, r.OpenFollowUps)
}

const maxProblems = 20

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// storedAction is an action row as the audit needs it.
type storedAction struct {
	ID, Operation, State, Outcome string
	NeedsOperator                 bool
	Logical                       string // the logical action its request names
}

// requiredStep names the step that decides each kind's outcome (the step
// is named by its capability).
var requiredStep = map[string]string{kindBook: provider.Calendar, kindCharge: provider.Payments, kindSend: provider.Messaging}

// logicalOfRequest names the logical action an action's normalised request
// is for: its slot, payment intent or send_ref.
func logicalOfRequest(operation string, request []byte) string {
	var in struct {
		SlotID          string `json:"slot_id"`
		PaymentIntentID string `json:"payment_intent_id"`
		SendRef         string `json:"send_ref"`
	}
	if json.Unmarshal(request, &in) != nil {
		return ""
	}
	switch operation {
	case "appointment.book":
		return kindBook + ":" + in.SlotID
	case "payment.charge":
		return kindCharge + ":" + in.PaymentIntentID
	case "message.send":
		return kindSend + ":" + in.SendRef
	}
	return ""
}

// logicalOfWrite names the logical action a provider write is for, from
// what the provider received: the step's payload.
func logicalOfWrite(step string, payload []byte) string {
	var in struct {
		SlotID          string `json:"slot_id"`
		PaymentIntentID string `json:"payment_intent_id"`
		SendRef         string `json:"send_ref"`
		SubjectID       string `json:"subject_id"`
	}
	if json.Unmarshal(payload, &in) != nil {
		return ""
	}
	switch step {
	case provider.Calendar:
		return kindBook + ":" + in.SlotID
	case provider.Payments:
		return kindCharge + ":" + in.PaymentIntentID
	case provider.Messaging:
		return kindSend + ":" + in.SendRef
	case "messaging.confirmation": // a booking's confirmation names its slot
		return kindBook + ":" + in.SubjectID
	}
	return ""
}

// audit compares what callers were told with the provider's ledger and
// oncecall's tables.
func audit(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID, ledger []providersim.LedgerEntry, actions []*logical) (Report, error) {
	stored, err := loadActions(ctx, pool, tenant)
	if err != nil {
		return Report{}, err
	}
	open, err := openFollowUps(ctx, pool, tenant)
	if err != nil {
		return Report{}, err
	}
	r := judge(stored, ledger, actions)
	r.OpenFollowUps = open
	return r, nil
}

// judge is the audit proper: stored are the tenant's actions by id, ledger
// the provider's committed writes, actions what the callers were told.
func judge(stored map[string]storedAction, ledger []providersim.LedgerEntry, actions []*logical) Report {
	var r Report
	for _, a := range stored {
		switch {
		case a.NeedsOperator:
			r.NeedsOperator++
		case a.State != "completed":
			r.StillUnknown++
			r.problem("action %s (%s) is still %s", a.ID, a.Operation, a.State)
		}
	}

	// writes[logical][step] are the provider's committed writes.
	writes := map[string]map[string][]providersim.LedgerEntry{}
	for _, w := range ledger {
		r.Writes++
		actionID, step := writeRef(w)
		name := logicalOfWrite(step, w.Payload)
		if a, ok := stored[actionID]; !ok || a.Logical != name {
			r.Unattributed++
			r.problem("provider write %s (%s) for %q matches no action of that request", w.ID, w.ExternalRef, name)
			continue
		}
		if writes[name] == nil {
			writes[name] = map[string][]providersim.LedgerEntry{}
		}
		writes[name][step] = append(writes[name][step], w)
	}

	asked := map[string]bool{}
	for _, l := range actions {
		r.Actions++
		r.Attempts += l.Attempts
		r.Polls += l.Polls
		name := l.key()
		asked[name] = true
		if l.Failure != "" {
			r.ProtocolErrors++
			r.problem("%s %s: %s", l.Style, name, l.Failure)
		}
		switch last := l.last(); {
		case last.ActionID == "":
			r.Unanswered++
		case last.Outcome == "confirmed":
			r.Confirmed++
		case last.Outcome == "rejected":
			r.Rejected++
		default:
			r.Pending++
		}

		for step, ws := range writes[name] {
			if len(ws) > 1 {
				r.Duplicates++
				r.problem("%s %s: %d provider writes for step %s: %s", l.Style, name, len(ws), step, refs(ws))
				break
			}
		}
		required := writes[name][requiredStep[l.Kind]]
		var confirmed, rejected bool
		var falseConf string
		for _, a := range l.Answers {
			switch a.Outcome {
			case "confirmed":
				confirmed = true
				if s, ok := stored[a.ActionID]; !ok || s.Outcome != "confirmed" {
					falseConf = fmt.Sprintf("told confirmed for action %s, which ends %s %s", a.ActionID, s.State, s.Outcome)
				} else if !writtenBy(required, a.ActionID) {
					falseConf = fmt.Sprintf("told confirmed for action %s, which has no provider write", a.ActionID)
				}
			case "rejected":
				rejected = true
			}
		}
		if confirmed && len(required) != 1 {
			r.Lost++
			r.problem("%s %s: told confirmed, %d provider writes for the required step", l.Style, name, len(required))
		}
		if falseConf != "" {
			r.FalseConfirmations++
			r.problem("%s %s: %s", l.Style, name, falseConf)
		}
		if rejected && (confirmed || len(required) > 0) {
			r.Contradictions++
			r.problem("%s %s: told rejected, yet told confirmed=%v with %d provider writes", l.Style, name, confirmed, len(required))
		}
	}
	for name, steps := range writes {
		if !asked[name] {
			for _, ws := range steps {
				r.Unattributed += len(ws)
				r.problem("provider writes %s for %q that no caller asked for", refs(ws), name)
			}
		}
	}
	return r
}

// writeRef reads the action and step a provider write was made for from its
// external reference, "<action id>/<step>".
func writeRef(w providersim.LedgerEntry) (actionID, step string) {
	actionID, step, _ = strings.Cut(w.ExternalRef, "/")
	return actionID, step
}

// writtenBy reports whether one of ws (the writes of one logical action's
// required step) was made for actionID.
func writtenBy(ws []providersim.LedgerEntry, actionID string) bool {
	for _, w := range ws {
		if id, _ := writeRef(w); id == actionID {
			return true
		}
	}
	return false
}

func refs(ws []providersim.LedgerEntry) string {
	var s []string
	for _, w := range ws {
		s = append(s, w.ID+"="+w.ExternalRef)
	}
	return strings.Join(s, ", ")
}

// loadActions reads the tenant's actions by id. The audit reads the tables
// directly: it checks oncecall, so it does not go through oncecall's store.
func loadActions(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID) (map[string]storedAction, error) {
	rows, err := pool.Query(ctx, `SELECT id::text, operation, state, coalesce(outcome, ''), needs_operator, request
		FROM actions WHERE tenant_id = $1`, tenant)
	if err != nil {
		return nil, fmt.Errorf("read actions: %w", err)
	}
	defer rows.Close()
	out := map[string]storedAction{}
	for rows.Next() {
		var a storedAction
		var request []byte
		if err := rows.Scan(&a.ID, &a.Operation, &a.State, &a.Outcome, &a.NeedsOperator, &request); err != nil {
			return nil, fmt.Errorf("read actions: %w", err)
		}
		a.Logical = logicalOfRequest(a.Operation, request)
		out[a.ID] = a
	}
	return out, rows.Err()
}

// unsettled counts the tenant's actions still running or unknown without an
// operator flag, and their unfinished follow-up steps.
func unsettled(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM actions
		WHERE tenant_id = $1 AND state IN ('running', 'unknown') AND NOT needs_operator`, tenant).Scan(&n)
	if err != nil {
		return 0, err
	}
	f, err := openFollowUps(ctx, pool, tenant)
	return n + f, err
}

func openFollowUps(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM action_steps s JOIN actions a ON a.id = s.action_id
		WHERE a.tenant_id = $1 AND NOT s.required AND s.state IN ('pending', 'unknown') AND NOT a.needs_operator`, tenant).Scan(&n)
	return n, err
}
