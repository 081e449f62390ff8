package db

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// A local operation whose writes and answer can be decided in SQL needs no
// round trip of its own: one statement (a data-modifying CTE per operation,
// queries/*.sql `ClaimAnd...`) checks the key, does the operation's writes,
// inserts the action already completed with its answer, and returns the
// key's action. PostgreSQL runs a lone statement as its own transaction, so
// a first execution and a replay both cost one round trip, and the action
// row is written once (no running row to update afterwards).
//
// The statement starts by reading the key's action. A key already taken (a
// replay) is answered with it: nothing else runs. Otherwise
// oncecall_key_free (migration 0011) waits for a concurrent attempt of the
// same key (an advisory lock of the key, held to the end of the statement)
// and checks that the key is still free. Every write is gated on that, so
// a replay writes nothing and gets the stored action back. The key's
// unique index remains the guarantee: an attempt in the other form (BEGIN,
// claim, writes, COMMIT) that commits the key first makes the action's
// INSERT fail, and the whole statement, its writes included, rolls back;
// the caller then reads the winner's action.

// Local is an operation's SQL form, bound to its input: what ClaimLocal
// runs for an action that tenant is about to claim.
type Local struct {
	tenant uuid.UUID
	run    func(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error)
}

// NewLocal returns a Local for an action that tenant is about to claim; one
// of its operation methods (Book, Reschedule, Cancel, CreateCustomer,
// UpdateCustomer, AppendNote, AddPoints) says what it does.
func NewLocal(tenant uuid.UUID) *Local { return &Local{tenant: tenant} }

// Tenant is the claiming tenant.
func (l *Local) Tenant() uuid.UUID { return l.tenant }

// Book makes l a booking of slot for customer: confirmed with the
// appointment, or rejected as BookSlot's caller would.
func (l *Local) Book(customer, slot uuid.UUID, service string) {
	l.run = func(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
		appointment, err := uuid.NewV7()
		if err != nil {
			return dbsqlc.Action{}, err
		}
		row, err := q.ClaimAndBook(ctx, dbsqlc.ClaimAndBookParams{
			TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, AppointmentID: appointment,
			Service: service, ID: c.ID, CustomerID: customer, SlotID: slot, Operation: c.Operation,
			Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID),
		})
		return dbsqlc.Action(row), err
	}
}

// Reschedule makes l a move of appointment to slot: confirmed with the
// appointment, or rejected as the Go form of appointment.reschedule would.
func (l *Local) Reschedule(appointment, slot uuid.UUID) {
	l.run = func(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
		row, err := q.ClaimAndReschedule(ctx, dbsqlc.ClaimAndRescheduleParams{
			TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, AppointmentID: appointment, SlotID: slot,
			ID: c.ID, Operation: c.Operation, Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID),
		})
		return dbsqlc.Action(row), err
	}
}

// Cancel makes l a cancellation of appointment: confirmed with the
// appointment, or rejected as CancelAppointment's caller would.
func (l *Local) Cancel(appointment uuid.UUID) {
	l.run = func(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
		row, err := q.ClaimAndCancel(ctx, dbsqlc.ClaimAndCancelParams{
			TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, AppointmentID: appointment,
			ID: c.ID, Operation: c.Operation, Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID),
		})
		return dbsqlc.Action(row), err
	}
}

// CreateCustomer makes l the creation of c (its TenantID is l's tenant):
// confirmed with the customer, or rejected as a phone or external reference
// already on file.
func (l *Local) CreateCustomer(c NewCustomer) {
	l.run = func(ctx context.Context, q *dbsqlc.Queries, cl Claim, wait string) (dbsqlc.Action, error) {
		id, err := uuid.NewV7()
		if err != nil {
			return dbsqlc.Action{}, err
		}
		row, err := q.ClaimAndCreateCustomer(ctx, dbsqlc.ClaimAndCreateCustomerParams{
			TenantID: cl.TenantID, IdempotencyKey: cl.Key, ClaimWait: wait, Phone: c.Phone, ExternalRef: c.ExternalRef,
			CustomerID: id, Name: c.Name, Email: c.Email, ID: cl.ID, Operation: cl.Operation,
			Fingerprint: cl.Fingerprint, Request: cl.Request, CallID: ptr(cl.CallID),
		})
		return dbsqlc.Action(row), err
	}
}

// UpdateCustomer makes l the change c (its TenantID is l's tenant):
// confirmed with the customer, or rejected as a missing customer or a phone
// or external reference another customer holds.
func (l *Local) UpdateCustomer(c CustomerChange) {
	l.run = func(ctx context.Context, q *dbsqlc.Queries, cl Claim, wait string) (dbsqlc.Action, error) {
		row, err := q.ClaimAndUpdateCustomer(ctx, dbsqlc.ClaimAndUpdateCustomerParams{
			TenantID: cl.TenantID, IdempotencyKey: cl.Key, ClaimWait: wait, CustomerID: c.ID,
			SetName: c.Name != nil, Name: deref(c.Name), SetPhone: c.Phone.Set, Phone: c.Phone.Value,
			SetEmail: c.Email.Set, Email: c.Email.Value, SetExternalRef: c.ExternalRef.Set, ExternalRef: c.ExternalRef.Value,
			ID: cl.ID, Operation: cl.Operation, Fingerprint: cl.Fingerprint, Request: cl.Request, CallID: ptr(cl.CallID),
		})
		return dbsqlc.Action(row), err
	}
}

// AppendNote makes l a note appended to customer's record (or the amended
// note of the claim's call under ref): confirmed with the note, or rejected
// as a missing customer.
func (l *Local) AppendNote(customer uuid.UUID, text, ref string) {
	l.run = func(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
		note, err := uuid.NewV7()
		if err != nil {
			return dbsqlc.Action{}, err
		}
		row, err := q.ClaimAndAppendNote(ctx, dbsqlc.ClaimAndAppendNoteParams{
			TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, NoteID: note, Text: text, NoteRef: ref,
			ID: c.ID, CustomerID: customer, Operation: c.Operation, Fingerprint: c.Fingerprint,
			Request: c.Request, CallID: ptr(c.CallID),
		})
		return dbsqlc.Action(row), err
	}
}

// AddPoints makes l a change of customer's loyalty balance by delta:
// confirmed with the ledger entry, or rejected as AddPoints's caller would.
func (l *Local) AddPoints(customer uuid.UUID, delta int64, reason string) {
	l.run = func(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
		entry, err := uuid.NewV7()
		if err != nil {
			return dbsqlc.Action{}, err
		}
		row, err := q.ClaimAndAddPoints(ctx, dbsqlc.ClaimAndAddPointsParams{
			TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, Delta: delta, CustomerID: customer,
			EntryID: entry, Reason: reason, ID: c.ID, Operation: c.Operation,
			Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID),
		})
		return dbsqlc.Action(row), err
	}
}

// ErrAtClaim marks a ClaimLocal error raised while the claim waited for a
// concurrent attempt of the same key.
var ErrAtClaim = errors.New("at the claim")

// ClaimLocal claims c (for l's tenant; c's lease is not used: the action
// is inserted completed), runs l's writes, completes the action and reads
// the action stored under c's key, in one statement: one round trip and one
// transaction. The claim waits at most the shorter of claimWait and the
// connection's lock_timeout for a concurrent attempt of the same key, and
// fails then with a lock timeout marked ErrAtClaim; the writes wait for
// their rows as long as the connection's lock_timeout allows. claimed
// reports whether this call inserted the action; a is the action the key
// names afterwards: this call's, completed, or one stored before. When a
// concurrent attempt of the key committed first, nothing is written and a
// is the zero Action: read it by key. Any error rolls everything back,
// except a broken connection, which leaves the outcome unknown
// (OutcomeUnknown): the statement commits when it ends, and its end may
// have been reached. The statement is never cancelled: when ctx ends first
// the outcome is unknown while it goes on.
func (s *Store) ClaimLocal(ctx context.Context, c Claim, claimWait time.Duration, l *Local) (claimed bool, a oncecall.Action, err error) {
	if l.run == nil {
		return false, oncecall.Action{}, errors.New("a local operation without its SQL form")
	}
	if c.TenantID != l.tenant {
		return false, oncecall.Action{}, errors.New("a local operation claimed for another tenant")
	}
	wait := strconv.FormatInt(max(claimWait.Milliseconds(), 1), 10) + "ms"
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, oncecall.Action{}, fmt.Errorf("acquire connection: %w", err)
	}
	// The statement commits when it ends, so no request context may cancel
	// it (see detach); it is bounded by the connection's timeouts.
	var row dbsqlc.Action
	err = detach(ctx, conn, func(ctx context.Context) error {
		var err error
		row, err = l.run(ctx, dbsqlc.New(conn), c, wait)
		return err
	})
	switch {
	case takenMeanwhile(err):
		return false, oncecall.Action{}, nil
	case LockTimeout(err) && waitedForKey(err):
		return false, oncecall.Action{}, fmt.Errorf("claim action: %w: %w", ErrAtClaim, err)
	case err != nil:
		return false, oncecall.Action{}, fmt.Errorf("claim and run a local operation: %w", err)
	}
	return row.ID == c.ID, action(row), nil
}

// takenMeanwhile reports whether err says a concurrent attempt of the same
// key committed first: the action's INSERT met its key (an attempt in the
// Go form), or the statement's snapshot, taken before oncecall_key_free
// waited for the attempt, does not hold the action that wait saw (no row).
func takenMeanwhile(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, pgx.ErrNoRows) ||
		errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == actionsKeyConstraint
}

// actionsKeyConstraint is the unique index of (tenant_id, idempotency_key).
const actionsKeyConstraint = "actions_tenant_id_idempotency_key_key"

// waitedForKey reports whether a lock timeout ended the wait for a
// concurrent attempt of the same key: in oncecall_key_free, or in the
// action's INSERT on the key's unique index (an attempt in the other form
// holds the key uncommitted; PostgreSQL names the index in the error's
// context), not a wait for a row one of the operation's writes needs.
func waitedForKey(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) &&
		(strings.Contains(pgErr.Where, "oncecall_key_free") || strings.Contains(pgErr.Where, `"`+actionsKeyConstraint+`"`))
}
