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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// An operation whose writes and answer can be decided in SQL is ONE
// statement (a data-modifying CTE per operation, queries/*.sql
// `ClaimAnd...`): it checks the key, does the operation's writes, inserts
// the action already completed with its answer, and returns the key's
// action. It is the operation's only implementation. PostgreSQL runs a lone
// statement as its own transaction, so a first execution and a replay both
// cost one round trip, and the action row is written once (no running row
// to update afterwards).
//
// The statement starts by reading the key's action. A key already taken (a
// replay) is answered with it: nothing else runs. Otherwise
// oncecall_key_free (migration 0011) waits for a concurrent attempt of the
// same key (an advisory lock of the key, held to the end of the
// transaction) and checks that the key is still free. Every write is gated
// on that, so a replay writes nothing and gets the stored action back. The
// key's unique index remains the guarantee: an attempt of an operation run
// statement by statement (BEGIN, claim, writes, COMMIT: ClaimTx) that
// commits the key first makes the action's INSERT fail, and the whole
// statement, its writes included, rolls back; the caller then reads the
// winner's action.
//
// Work the statement cannot do (a booking's confirmation message, rendered
// in Go) is a follow-up (Statement.Then): the statement then runs inside a
// transaction, the follow-up after it in the same transaction, and the
// stored answer is updated before COMMIT. The booking is still the
// statement's.

// Statement is an operation's one statement, bound to its input: what
// ClaimOnce runs for an action that tenant is about to claim.
type Statement struct {
	tenant uuid.UUID
	// run is the statement an operation method (Book, ...) made.
	run claimer
	// then is the follow-up, when one was given (Then).
	then Sequel
}

// claimer is one of the statements: it runs its query for claim c.
type claimer interface {
	claim(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error)
}

// Sequel is work a statement cannot do, done after it in its
// transaction (see Statement.Then).
type Sequel interface {
	// Follow runs with the action as the statement stored it; a result it
	// returns replaces the stored answer's body before COMMIT.
	Follow(ctx context.Context, tx *Tx, a oncecall.Action) (result []byte, err error)
}

// NewStatement returns a Statement for an action that tenant is about to
// claim; one of its operation methods (Book, BookService, Reschedule, Cancel,
// CreateCustomer, UpdateCustomer, AppendNote, AddPoints) says what it does.
func NewStatement(tenant uuid.UUID) *Statement { return &Statement{tenant: tenant} }

// Tenant is the claiming tenant.
func (st *Statement) Tenant() uuid.UUID { return st.tenant }

// Then makes f a follow-up of the statement: when the statement claims the
// action, f runs after it in the same transaction with the action as the
// statement stored it, and a result f returns replaces the stored answer's
// body before COMMIT. An error from f rolls everything back, the
// statement's writes included.
func (st *Statement) Then(f Sequel) {
	st.then = f
}

// Book makes st a booking of slot for customer: confirmed with the
// appointment, or rejected as a customer or slot missing, or a slot past or
// taken, or, in a voice call, as BookRef.
func (st *Statement) Book(customer, slot uuid.UUID, service string) {
	st.BookRef(customer, slot, service, "")
}

// BookRef is Book of the booking bookingRef names among the customer's
// bookings in the claim's voice call: refused while another booking of the
// customer in that call under bookingRef stands (ALREADY_BOOKED_IN_CALL).
func (st *Statement) BookRef(customer, slot uuid.UUID, service, bookingRef string) {
	st.run = bookRefClaim{customer, slot, service, bookingRef}
}

// bookRefClaim is the statement BookRef makes.
type bookRefClaim struct {
	customer, slot      uuid.UUID
	service, bookingRef string
}

func (k bookRefClaim) claim(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
	customer, slot, service, bookingRef := k.customer, k.slot, k.service, k.bookingRef
	appointment, err := uuid.NewV7()
	if err != nil {
		return dbsqlc.Action{}, err
	}
	row, err := q.ClaimAndBook(ctx, dbsqlc.ClaimAndBookParams{
		TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, AppointmentID: appointment,
		Service: service, BookingRef: bookingRef, ID: c.ID, CustomerID: customer, SlotID: slot, Operation: c.Operation,
		Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID), CallPlatform: ptr(c.CallPlatform),
	})
	return dbsqlc.Action(row), err
}

// ServiceBooking is a booking of a service at a time: Start (an instant)
// or StartLocal (a wall-clock time, YYYY-MM-DDTHH:MM:SS, in the location's
// timezone), optionally of one practitioner or at one location. BookingRef
// names it among the customer's bookings in the claim's voice call.
type ServiceBooking struct {
	Customer, Service      uuid.UUID
	Start                  time.Time
	StartLocal             string
	Practitioner, Location uuid.UUID
	BookingRef             string
}

// BookService makes st a booking of b's service at b's time with the first
// free practitioner (by name, then id): confirmed with the appointment, or
// rejected as a customer or service missing, no practitioner free then, or
// the customer's booking in the claim's voice call that stands (see Book).
// A concurrent booking of the slot it picked makes it fail as a lost race
// (Retryable), to be run again with a fresh snapshot.
func (st *Statement) BookService(b ServiceBooking) {
	st.run = bookServiceClaim{b}
}

// bookServiceClaim is the statement BookService makes.
type bookServiceClaim struct {
	b ServiceBooking
}

func (k bookServiceClaim) claim(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
	b := k.b
	appointment, err := uuid.NewV7()
	if err != nil {
		return dbsqlc.Action{}, err
	}
	p := dbsqlc.ClaimAndBookServiceParams{
		TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, ServiceID: b.Service,
		StartsLocal: ptr(b.StartLocal), PractitionerID: ptr(b.Practitioner), LocationID: ptr(b.Location),
		AppointmentID: appointment, ID: c.ID, CustomerID: b.Customer, BookingRef: b.BookingRef, Operation: c.Operation,
		Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID), CallPlatform: ptr(c.CallPlatform),
	}
	if !b.Start.IsZero() {
		p.StartsAt = &b.Start
	}
	row, err := q.ClaimAndBookService(ctx, p)
	return dbsqlc.Action(row), err
}

// Reschedule makes st a move of appointment to slot: confirmed with the
// appointment, or rejected as an appointment missing or no longer active, or a slot
// missing, past or taken.
func (st *Statement) Reschedule(appointment, slot uuid.UUID) {
	st.run = rescheduleClaim{appointment, slot}
}

// rescheduleClaim is the statement Reschedule makes.
type rescheduleClaim struct {
	appointment, slot uuid.UUID
}

func (k rescheduleClaim) claim(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
	appointment, slot := k.appointment, k.slot
	row, err := q.ClaimAndReschedule(ctx, dbsqlc.ClaimAndRescheduleParams{
		TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, AppointmentID: appointment, SlotID: slot,
		ID: c.ID, Operation: c.Operation, Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID), CallPlatform: ptr(c.CallPlatform),
	})
	return dbsqlc.Action(row), err
}

// Cancel makes st a cancellation of appointment: confirmed with the
// appointment, or rejected as an appointment missing or no longer active.
func (st *Statement) Cancel(appointment uuid.UUID) {
	st.run = cancelClaim{appointment}
}

// cancelClaim is the statement Cancel makes.
type cancelClaim struct {
	appointment uuid.UUID
}

func (k cancelClaim) claim(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
	appointment := k.appointment
	row, err := q.ClaimAndCancel(ctx, dbsqlc.ClaimAndCancelParams{
		TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, AppointmentID: appointment,
		ID: c.ID, Operation: c.Operation, Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID), CallPlatform: ptr(c.CallPlatform),
	})
	return dbsqlc.Action(row), err
}

// CreateCustomer makes st the creation of c (its TenantID is st's tenant):
// confirmed with the customer, or rejected as a phone or external reference
// already on file.
func (st *Statement) CreateCustomer(c NewCustomer) {
	st.run = createCustomerClaim{c}
}

// createCustomerClaim is the statement CreateCustomer makes.
type createCustomerClaim struct {
	c NewCustomer
}

func (k createCustomerClaim) claim(ctx context.Context, q *dbsqlc.Queries, cl Claim, wait string) (dbsqlc.Action, error) {
	c := k.c
	id, err := uuid.NewV7()
	if err != nil {
		return dbsqlc.Action{}, err
	}
	row, err := q.ClaimAndCreateCustomer(ctx, dbsqlc.ClaimAndCreateCustomerParams{
		TenantID: cl.TenantID, IdempotencyKey: cl.Key, ClaimWait: wait, Phone: c.Phone, ExternalRef: c.ExternalRef,
		CustomerID: id, Name: c.Name, Email: c.Email, ID: cl.ID, Operation: cl.Operation,
		Fingerprint: cl.Fingerprint, Request: cl.Request, CallID: ptr(cl.CallID), CallPlatform: ptr(cl.CallPlatform),
	})
	return dbsqlc.Action(row), err
}

// UpdateCustomer makes st the change c (its TenantID is st's tenant):
// confirmed with the customer, or rejected as a missing customer or a phone
// or external reference another customer holds.
func (st *Statement) UpdateCustomer(c CustomerChange) {
	st.run = updateCustomerClaim{c}
}

// updateCustomerClaim is the statement UpdateCustomer makes.
type updateCustomerClaim struct {
	c CustomerChange
}

func (k updateCustomerClaim) claim(ctx context.Context, q *dbsqlc.Queries, cl Claim, wait string) (dbsqlc.Action, error) {
	c := k.c
	row, err := q.ClaimAndUpdateCustomer(ctx, dbsqlc.ClaimAndUpdateCustomerParams{
		TenantID: cl.TenantID, IdempotencyKey: cl.Key, ClaimWait: wait, CustomerID: c.ID,
		SetName: c.Name != nil, Name: deref(c.Name), SetPhone: c.Phone.Set, Phone: c.Phone.Value,
		SetEmail: c.Email.Set, Email: c.Email.Value, SetExternalRef: c.ExternalRef.Set, ExternalRef: c.ExternalRef.Value,
		ID: cl.ID, Operation: cl.Operation, Fingerprint: cl.Fingerprint, Request: cl.Request, CallID: ptr(cl.CallID), CallPlatform: ptr(cl.CallPlatform),
	})
	return dbsqlc.Action(row), err
}

// AppendNote makes st a note appended to customer's record (or the amended
// note of the claim's call under ref): confirmed with the note, or rejected
// as a missing customer.
func (st *Statement) AppendNote(customer uuid.UUID, text, ref string) {
	st.run = appendNoteClaim{customer, text, ref}
}

// appendNoteClaim is the statement AppendNote makes.
type appendNoteClaim struct {
	customer  uuid.UUID
	text, ref string
}

func (k appendNoteClaim) claim(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
	customer, text, ref := k.customer, k.text, k.ref
	note, err := uuid.NewV7()
	if err != nil {
		return dbsqlc.Action{}, err
	}
	row, err := q.ClaimAndAppendNote(ctx, dbsqlc.ClaimAndAppendNoteParams{
		TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, NoteID: note, Text: text, NoteRef: ref,
		ID: c.ID, CustomerID: customer, Operation: c.Operation, Fingerprint: c.Fingerprint,
		Request: c.Request, CallID: ptr(c.CallID), CallPlatform: ptr(c.CallPlatform),
	})
	return dbsqlc.Action(row), err
}

// AddPoints makes st a change of customer's loyalty balance by delta:
// confirmed with the ledger entry, or rejected as a customer missing or a
// balance too small.
func (st *Statement) AddPoints(customer uuid.UUID, delta int64, reason string) {
	st.run = addPointsClaim{customer, delta, reason}
}

// addPointsClaim is the statement AddPoints makes.
type addPointsClaim struct {
	customer uuid.UUID
	delta    int64
	reason   string
}

func (k addPointsClaim) claim(ctx context.Context, q *dbsqlc.Queries, c Claim, wait string) (dbsqlc.Action, error) {
	customer, delta, reason := k.customer, k.delta, k.reason
	entry, err := uuid.NewV7()
	if err != nil {
		return dbsqlc.Action{}, err
	}
	row, err := q.ClaimAndAddPoints(ctx, dbsqlc.ClaimAndAddPointsParams{
		TenantID: c.TenantID, IdempotencyKey: c.Key, ClaimWait: wait, Delta: delta, CustomerID: customer,
		EntryID: entry, Reason: reason, ID: c.ID, Operation: c.Operation,
		Fingerprint: c.Fingerprint, Request: c.Request, CallID: ptr(c.CallID), CallPlatform: ptr(c.CallPlatform),
	})
	return dbsqlc.Action(row), err
}

// ErrAtClaim marks a ClaimOnce error raised while the claim waited for a
// concurrent attempt of the same key.
var ErrAtClaim = errors.New("at the claim")

// ClaimOnce claims c (for st's tenant; c's lease is not used: the action
// is inserted completed), runs st's writes, completes the action and reads
// the action stored under c's key, in one statement: one round trip and one
// transaction. The claim waits at most the shorter of claimWait and the
// connection's lock_timeout for a concurrent attempt of the same key, and
// fails then with a lock timeout marked ErrAtClaim; the writes wait for
// their rows as long as the connection's lock_timeout allows. claimed
// reports whether this call inserted the action; a is the action the key
// names afterwards: this call's, completed, or one stored before. When a
// concurrent attempt of the key committed first, nothing is written and a
// is the zero Action: read it by key. Any error rolls everything back,
// except a broken connection once the commit is on its way, which leaves
// the outcome unknown (OutcomeUnknown): a lone statement commits when it
// ends, and its end may have been reached. The commit is never cancelled:
// when ctx ends first the outcome is unknown while it goes on. A statement
// with a follow-up (Then) runs in a transaction of its own, with its
// follow-up, and commits after them.
func (s *Store) ClaimOnce(ctx context.Context, c Claim, claimWait time.Duration, st *Statement) (claimed bool, a oncecall.Action, err error) {
	if st.run == nil {
		return false, oncecall.Action{}, errors.New("an operation's statement without its operation")
	}
	if c.TenantID != st.tenant {
		return false, oncecall.Action{}, errors.New("an operation's statement claimed for another tenant")
	}
	wait := strconv.FormatInt(max(claimWait.Milliseconds(), 1), 10) + "ms"
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, oncecall.Action{}, fmt.Errorf("acquire connection: %w", err)
	}
	if st.then != nil {
		return s.claimOnceThen(ctx, conn, c, wait, st)
	}
	// The statement commits when it ends, so no request context may cancel
	// it (see detach); it is bounded by the connection's timeouts.
	var row dbsqlc.Action
	err = detach(ctx, conn, func(ctx context.Context) error {
		var err error
		row, err = st.run.claim(ctx, dbsqlc.New(conn), c, wait)
		return err
	})
	if err := claimError(err); err != nil {
		return false, oncecall.Action{}, err
	}
	if row.ID == uuid.Nil { // taken meanwhile
		return false, oncecall.Action{}, nil
	}
	return row.ID == c.ID, action(row), nil
}

// claimOnceThen is ClaimOnce for a statement with a follow-up: BEGIN, the
// statement, the follow-up when the statement claimed the action, and the
// follow-up's answer stored together with COMMIT. Until that COMMIT is sent
// nothing is stored, whatever fails.
func (s *Store) claimOnceThen(ctx context.Context, conn *pgxpool.Conn, c Claim, wait string, st *Statement) (bool, oncecall.Action, error) {
	committing := false
	defer func() {
		if !committing {
			rollbackOpen(context.WithoutCancel(ctx), conn)
			conn.Release()
		}
	}()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return false, oncecall.Action{}, fmt.Errorf("begin: %w", err)
	}
	row, err := st.run.claim(ctx, dbsqlc.New(tx), c, wait)
	if err := claimError(err); err != nil || row.ID != c.ID {
		// A replay, the key taken meanwhile (no row) or an error: the
		// transaction wrote nothing that stays.
		if err != nil || row.ID == uuid.Nil {
			return false, oncecall.Action{}, err
		}
		return false, action(row), nil
	}
	a := action(row)
	result, err := st.then.Follow(ctx, s.tx(tx), a)
	if err != nil {
		return true, oncecall.Action{}, err
	}
	// From here on the connection belongs to the commit (see detach).
	committing = true
	err = detach(ctx, conn, func(ctx context.Context) error {
		defer rollbackOpen(ctx, conn)
		if result == nil {
			if err := tx.Commit(ctx); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			return nil
		}
		return execAndCommit(ctx, conn.Conn(), "store the answer", setResultSQL, a.ID, result)
	})
	if err != nil {
		return true, oncecall.Action{}, err
	}
	if result != nil {
		a.Result = result
	}
	return true, a, nil
}

// claimError is err from an operation's statement as ClaimOnce reports
// it: nil when a concurrent attempt of the key committed first (the caller
// then finds no row), marked ErrAtClaim when the wait for such an attempt
// timed out.
func claimError(err error) error {
	switch {
	case takenMeanwhile(err):
		return nil
	case LockTimeout(err) && waitedForKey(err):
		return fmt.Errorf("claim action: %w: %w", ErrAtClaim, err)
	case err != nil:
		return fmt.Errorf("claim and run an operation's statement: %w", err)
	}
	return nil
}

// takenMeanwhile reports whether err says a concurrent attempt of the same
// key committed first: the action's INSERT met its key (an attempt run
// statement by statement), or the statement's snapshot, taken before oncecall_key_free
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
// action's INSERT on the key's unique index (an attempt run statement by
// statement holds the key uncommitted; PostgreSQL names the index in the error's
// context), not a wait for a row one of the operation's writes needs.
func waitedForKey(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) &&
		(strings.Contains(pgErr.Where, "oncecall_key_free") || strings.Contains(pgErr.Where, `"`+actionsKeyConstraint+`"`))
}
