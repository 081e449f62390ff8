package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// Report is what a chaos run found.
type Report struct {
	// Actions are the logical actions the fleet started; Attempts their
	// write requests (first tries and retries), Polls their status checks.
	Actions, Attempts, Polls int
	// Kills counts replicas SIGKILLed; PGRestarts PostgreSQL restarts.
	Kills, PGRestarts int

	// Duplicates: logical actions with more than one effect (a provider
	// write, or a points entry) for one step, or a balance that holds more
	// than the confirmed change.
	Duplicates int
	// Lost: logical actions a caller was told confirmed without exactly one
	// effect for the required step, or a confirmed points change missing
	// from the balance or the points ledger.
	Lost int
	// FalseConfirmations: logical actions a caller was told confirmed whose
	// action ends rejected or has no effect.
	FalseConfirmations int
	// NeedsOperator and StillUnknown count actions left for an operator,
	// and unfinished actions not flagged for one, after the settle.
	NeedsOperator, StillUnknown int

	// Contradictions: a caller told both confirmed and rejected, or told
	// rejected while the effect exists, or a points entry whose action does
	// not end confirmed.
	Contradictions int
	// Unattributed: effects (and points balances) no logical action of the
	// fleet asked for.
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
	// Writes are the provider's committed writes; Entries the rows of
	// points_ledger; CalendarEvents the events oncecall made in the
	// calendar tenants' fakes (counted in Writes too).
	Writes, Entries, CalendarEvents int

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
	return fmt.Sprintf("chaos: told confirmed=%d rejected=%d pending=%d unanswered=%d polls=%d provider_writes=%d calendar_events=%d points_entries=%d "+
		"pg_restarts=%d contradictions=%d unattributed=%d protocol_errors=%d open_follow_ups=%d",
		r.Confirmed, r.Rejected, r.Pending, r.Unanswered, r.Polls, r.Writes, r.CalendarEvents, r.Entries,
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

// stepPoints names a points change's only effect: its points_ledger row,
// written with the balance by the statement that completes the action.
const stepPoints = "points"

// requiredStep names the step that decides each kind's outcome (a remote
// step is named by its capability).
var requiredStep = map[string]string{
	kindBook: provider.Calendar, kindCharge: provider.Payments, kindSend: provider.Messaging, kindPoints: stepPoints,
}

// effect is one committed effect of a step of an action: a write the
// provider holds, or a points_ledger row.
type effect struct {
	Ref      string // the provider's write id or the row's id
	ActionID string
	Step     string
	Logical  string // the logical action it is for, by what was written
	Delta    int64  // a points entry's delta
}

// points is what the database holds of points changes: the tenant's
// points_ledger rows and its customers' balances by logical action name.
type points struct {
	entries  []effect
	balances map[string]int64
}

// logicalOfRequest names the logical action an action's normalised request
// is for: its slot, payment intent, send_ref or customer.
func logicalOfRequest(operation string, request []byte) string {
	var in struct {
		SlotID          string `json:"slot_id"`
		PaymentIntentID string `json:"payment_intent_id"`
		SendRef         string `json:"send_ref"`
		CustomerID      string `json:"customer_id"`
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
	case "customer.points.add":
		return kindPoints + ":" + in.CustomerID
	}
	return ""
}

// providerEffects reads the provider's writes as effects: the action and
// step from the external reference, "<action id>/<step>", the logical
// action from the step's payload.
func providerEffects(ledger []providersim.LedgerEntry) []effect {
	out := make([]effect, 0, len(ledger))
	for _, w := range ledger {
		actionID, step, _ := strings.Cut(w.ExternalRef, "/")
		out = append(out, effect{Ref: w.ID, ActionID: actionID, Step: step, Logical: logicalOfWrite(step, w.Payload)})
	}
	return out
}

// stripeCaptures reads Stripe's PaymentIntents as provider writes: one per
// capture (a PaymentIntent captured twice is two charges), named by the
// action, step and intent in its metadata.
func stripeCaptures(pis []providersim.StripePaymentIntent) []providersim.LedgerEntry {
	var out []providersim.LedgerEntry
	for _, pi := range pis {
		payload, _ := json.Marshal(map[string]string{"payment_intent_id": pi.Metadata[stripeprovider.MetaIntent]})
		ref := pi.Metadata[stripeprovider.MetaAction] + "/" + pi.Metadata[stripeprovider.MetaStep]
		if charge := pi.Metadata[stripeprovider.MetaChargeAction]; charge != "" {
			// A hold made at approval, captured by a charge.
			ref = charge + "/" + pi.Metadata[stripeprovider.MetaChargeStep]
		}
		for range pi.Captures {
			out = append(out, providersim.LedgerEntry{Requests: 1, Write: providersim.Write{
				ID: pi.ID, Capability: provider.Payments, Operation: stripeprovider.Operation, Status: providersim.StatusCommitted,
				ExternalRef: ref, Payload: payload,
			}})
		}
	}
	return out
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

// audit compares what callers were told with the providers' ledgers and
// oncecall's tables, for the run's tenants.
func audit(ctx context.Context, pool *pgxpool.Pool, tenant []uuid.UUID, ledger []providersim.LedgerEntry, actions []*logical) (Report, error) {
	stored, err := loadActions(ctx, pool, tenant)
	if err != nil {
		return Report{}, err
	}
	pts, err := loadPoints(ctx, pool, tenant)
	if err != nil {
		return Report{}, err
	}
	open, err := openFollowUps(ctx, pool, tenant)
	if err != nil {
		return Report{}, err
	}
	r := judge(stored, ledger, pts, actions)
	r.OpenFollowUps = open
	return r, nil
}

// judge is the audit proper: stored are the tenant's actions by id, ledger
// the provider's committed writes, pts the points changes in the database,
// actions what the callers were told.
func judge(stored map[string]storedAction, ledger []providersim.LedgerEntry, pts points, actions []*logical) Report {
	var r Report
	// confirmed: logical actions one of whose actions ends confirmed.
	confirmed := map[string]bool{}
	for _, a := range stored {
		switch {
		case a.NeedsOperator:
			r.NeedsOperator++
		case a.State != "completed":
			r.StillUnknown++
			r.problem("action %s (%s) is still %s", a.ID, a.Operation, a.State)
		}
		if a.State == "completed" && a.Outcome == "confirmed" {
			confirmed[a.Logical] = true
		}
	}

	// writes[logical][step] are the committed effects: the provider's
	// writes and the points entries.
	r.Writes, r.Entries = len(ledger), len(pts.entries)
	writes := map[string]map[string][]effect{}
	for _, e := range append(providerEffects(ledger), pts.entries...) {
		if a, ok := stored[e.ActionID]; !ok || a.Logical != e.Logical {
			r.Unattributed++
			r.problem("effect %s (%s/%s) for %q matches no action of that request", e.Ref, e.ActionID, e.Step, e.Logical)
			continue
		}
		if writes[e.Logical] == nil {
			writes[e.Logical] = map[string][]effect{}
		}
		writes[e.Logical][e.Step] = append(writes[e.Logical][e.Step], e)
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

		var dup, lost, contradiction bool
		for step, ws := range writes[name] {
			if len(ws) > 1 {
				dup = true
				r.problem("%s %s: %d effects for step %s: %s", l.Style, name, len(ws), step, refs(ws))
				break
			}
		}
		required := writes[name][requiredStep[l.Kind]]
		var told, rejected bool
		var falseConf string
		for _, a := range l.Answers {
			switch a.Outcome {
			case "confirmed":
				told = true
				if s, ok := stored[a.ActionID]; !ok || s.Outcome != "confirmed" {
					falseConf = fmt.Sprintf("told confirmed for action %s, which ends %s %s", a.ActionID, s.State, s.Outcome)
				} else if !writtenBy(required, a.ActionID) {
					falseConf = fmt.Sprintf("told confirmed for action %s, which has no effect", a.ActionID)
				}
			case "rejected":
				rejected = true
			}
		}
		if told && len(required) != 1 {
			lost = true
			r.problem("%s %s: told confirmed, %d effects for the required step", l.Style, name, len(required))
		}
		if rejected && (told || len(required) > 0) {
			contradiction = true
			r.problem("%s %s: told rejected, yet told confirmed=%v with %d effects", l.Style, name, told, len(required))
		}
		if l.Kind == kindPoints {
			d, lo, c := r.judgePoints(l, stored, required, confirmed[name], pts.balances[name])
			dup, lost, contradiction = dup || d, lost || lo, contradiction || c
		}
		if dup {
			r.Duplicates++
		}
		if lost {
			r.Lost++
		}
		if falseConf != "" {
			r.FalseConfirmations++
			r.problem("%s %s: %s", l.Style, name, falseConf)
		}
		if contradiction {
			r.Contradictions++
		}
	}
	for name, steps := range writes {
		if !asked[name] {
			for _, ws := range steps {
				r.Unattributed += len(ws)
				r.problem("effects %s for %q that no caller asked for", refs(ws), name)
			}
		}
	}
	for name, balance := range pts.balances {
		if !asked[name] && balance != 0 {
			r.Unattributed++
			r.problem("a balance of %d for %q that no caller asked for", balance, name)
		}
	}
	return r
}

// judgePoints holds a points change to what its one statement promises
// beyond the rules of every kind: no entry without its action confirmed,
// and a balance that is the sum of the entries and the delta once if the
// change was confirmed, else zero. entries are its points_ledger rows;
// confirmed tells whether one of its actions ends confirmed. More than that
// is a duplicate, less a lost change.
func (r *Report) judgePoints(l *logical, stored map[string]storedAction, entries []effect, confirmed bool, balance int64) (dup, lost, contradiction bool) {
	var sum int64
	for _, e := range entries {
		sum += e.Delta
		if a := stored[e.ActionID]; a.State != "completed" || a.Outcome != "confirmed" {
			contradiction = true
			r.problem("%s %s: points entry %s of action %s, which ends %s %s", l.Style, l.key(), e.Ref, e.ActionID, a.State, a.Outcome)
		}
	}
	var want int64
	if confirmed {
		want = l.Delta
	}
	if balance != want || sum != want {
		dup, lost = balance > want || sum > want, balance < want || sum < want
		r.problem("%s %s: balance %d, entries summing to %d, want %d (delta %d, confirmed %v)", l.Style, l.key(), balance, sum, want, l.Delta, confirmed)
	}
	return dup, lost, contradiction
}

// writtenBy reports whether one of es (the effects of one logical action's
// required step) was made for actionID.
func writtenBy(es []effect, actionID string) bool {
	for _, e := range es {
		if e.ActionID == actionID {
			return true
		}
	}
	return false
}

func refs(es []effect) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Ref+"="+e.ActionID+"/"+e.Step)
	}
	return strings.Join(s, ", ")
}

// loadActions reads the tenant's actions by id. The audit reads the tables
// directly: it checks oncecall, so it does not go through oncecall's store.
func loadActions(ctx context.Context, pool *pgxpool.Pool, tenant []uuid.UUID) (map[string]storedAction, error) {
	rows, err := pool.Query(ctx, `SELECT id::text, operation, state, coalesce(outcome, ''), needs_operator, request
		FROM actions WHERE tenant_id = ANY($1)`, tenant)
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

// loadPoints reads the tenant's points_ledger rows and its customers'
// balances.
func loadPoints(ctx context.Context, pool *pgxpool.Pool, tenant []uuid.UUID) (points, error) {
	p := points{balances: map[string]int64{}}
	e := effect{Step: stepPoints}
	var customer string
	rows, err := pool.Query(ctx, `SELECT id::text, action_id::text, customer_id::text, delta
		FROM points_ledger WHERE tenant_id = ANY($1)`, tenant)
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&e.Ref, &e.ActionID, &customer, &e.Delta}, func() error {
			e.Logical = kindPoints + ":" + customer
			p.entries = append(p.entries, e)
			return nil
		})
	}
	if err != nil {
		return p, fmt.Errorf("read points_ledger: %w", err)
	}
	var balance int64
	rows, err = pool.Query(ctx, `SELECT id::text, points FROM customers WHERE tenant_id = ANY($1)`, tenant)
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&customer, &balance}, func() error {
			p.balances[kindPoints+":"+customer] = balance
			return nil
		})
	}
	if err != nil {
		return p, fmt.Errorf("read balances: %w", err)
	}
	return p, nil
}

// unsettled counts the tenant's actions still running or unknown without an
// operator flag, and their unfinished follow-up steps.
func unsettled(ctx context.Context, pool *pgxpool.Pool, tenant []uuid.UUID) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM actions
		WHERE tenant_id = ANY($1) AND state IN ('running', 'unknown') AND NOT needs_operator`, tenant).Scan(&n)
	if err != nil {
		return 0, err
	}
	f, err := openFollowUps(ctx, pool, tenant)
	return n + f, err
}

func openFollowUps(ctx context.Context, pool *pgxpool.Pool, tenant []uuid.UUID) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM action_steps s JOIN actions a ON a.id = s.action_id
		WHERE a.tenant_id = ANY($1) AND NOT s.required AND s.state IN ('pending', 'unknown') AND NOT a.needs_operator`, tenant).Scan(&n)
	return n, err
}
