package db

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Retryable reports whether err means the whole transaction should be run
// again with a fresh snapshot: a serialization failure, a deadlock, or a
// unique violation raised by a business write that lost a race (the claim
// itself never raises one: it uses ON CONFLICT DO NOTHING).
func Retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "40001", "40P01", "23505":
		return true
	}
	return false
}

// LockTimeout reports whether PostgreSQL ended a statement because it
// waited longer than lock_timeout for a lock.
func LockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// Unavailable reports whether err means PostgreSQL could not do the work
// for operational reasons rather than because of the request: it could not
// be reached, the connection broke, it refused work or ran out of
// resources, or a lock, statement or idle-in-transaction timeout ended the
// statement. The caller may retry later.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58": // connection exception, insufficient resources, operator intervention (statement timeout), system error
			return true
		}
		switch pgErr.Code {
		case "55P03", "25P03", readOnlyTransaction: // lock timeout, idle-in-transaction timeout, a demoted primary
			return true
		}
		return false
	}
	return connLost(err)
}

// connLost reports whether err is a failure of the connection itself, not
// an answer of the server: it could not be opened, it was reset or closed,
// it ended in the middle of an answer, or a deadline cut it.
func connLost(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	// Every error pgconn raises about the connection says whether anything
	// had been sent (SafeToRetry); PgError, the server's answer, does not.
	var pgconnErr interface{ SafeToRetry() bool }
	return errors.As(err, &connErr) || errors.As(err, &netErr) || errors.As(err, &pgconnErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// commitUnknownError is a failure after COMMIT was sent and before its
// answer arrived: the transaction may or may not be committed.
type commitUnknownError struct{ err error }

func (e *commitUnknownError) Error() string {
	return "the connection broke after COMMIT was sent, so the transaction may or may not be committed: " + e.err.Error()
}

func (e *commitUnknownError) Unwrap() error { return e.err }

// OutcomeUnknown reports whether err says that a COMMIT was sent but its
// answer was lost, so nobody knows whether the transaction took effect.
func OutcomeUnknown(err error) bool {
	var e *commitUnknownError
	return errors.As(err, &e)
}

// afterCommit classifies an error met once a COMMIT was handed to the
// connection (alone, or at the end of a batch): it leaves the outcome
// unknown unless it proves that nothing was committed, which an ERROR from
// the server (the transaction rolled back) and a failure pgconn reports as
// safe to retry (nothing was sent) do.
func afterCommit(err error) error {
	var connectErr *pgconn.ConnectError
	// A failed connect (refused, or a read-only server refused by
	// target_session_attrs) sent nothing; pgconn does not mark it safe to
	// retry, as it cannot tell what the caller would have sent.
	if err == nil || pgconn.SafeToRetry(err) || errors.As(err, &connectErr) || OutcomeUnknown(err) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// FATAL or PANIC: the server ended the session, perhaps with the
		// commit already durable.
		if sev := pgErr.SeverityUnlocalized; sev == "FATAL" || sev == "PANIC" || pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" {
			return &commitUnknownError{err: err}
		}
		return err
	}
	if connLost(err) || errors.Is(err, context.Canceled) {
		return &commitUnknownError{err: err}
	}
	return err
}

// What a client hears when the database failed it: the two cases differ in
// whether the request may have been stored.
const (
	unavailableMessage = "the database is unavailable; nothing was stored for this request. " +
		"Retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call)"
	tenantGoneMessage = "this tenant's data moved to another database cluster while this request ran; nothing was stored for it. " +
		"Retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call)"
	unknownMessage = "the connection to the database broke while this request was being committed, so its outcome is unknown: " +
		"it may or may not have been stored. Retry after the delay in Retry-After with the same Idempotency-Key " +
		"(or the same tool call): the retry answers with the stored result, or runs the request once if it was not stored"
	notReplicatedMessage = "the database could not confirm that this request's stored result is safe on its standby, so its outcome is unknown: " +
		"a database failover now could lose it. Retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call): " +
		"the retry answers with the stored result once it is replicated, or runs the request once if it was lost"
)

// UnavailableError is a failure of the database as a client hears it:
// Message says whether the request may have been stored, Err is the cause
// (logged, never shown). The error vocabulary (internal/fault: fault.As)
// answers it SERVICE_UNAVAILABLE with Message, by its Unavailable method;
// storage knows no codes.
type UnavailableError struct {
	Message string
	Err     error
}

func (e *UnavailableError) Error() string { return e.Err.Error() }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable is what the client hears: the database could not do the
// work, and whether anything was stored.
func (e *UnavailableError) Unavailable() string { return e.Message }

// Fault says what a storage failure means for the request. A lost COMMIT
// answer is an *UnavailableError saying the outcome is unknown; any other
// failure of the database (unreachable, connection lost before COMMIT, a
// lock or statement timeout, no resources) is one saying nothing was
// stored, which is true because PostgreSQL rolls back a transaction whose
// COMMIT it never got. An error already said so, cancellations and
// anything else are returned as they are (an error that carries a code
// keeps it: fault.As finds the code first; internal errors stay internal).
func Fault(err error) error {
	var ue *UnavailableError
	switch {
	case err == nil || errors.As(err, &ue):
		return err
	case OutcomeUnknown(err):
		return &UnavailableError{Message: unknownMessage, Err: err}
	case NotReplicated(err):
		return &UnavailableError{Message: notReplicatedMessage, Err: err}
	case errors.Is(err, context.Canceled):
		return err
	case Unavailable(err):
		return &UnavailableError{Message: unavailableMessage, Err: err}
	case tenantGone(err):
		return &UnavailableError{Message: tenantGoneMessage, Err: err}
	}
	return err
}

// tenantGone reports a write refused because its tenant's row is not in
// this database: the tenant moved to another cluster while the request ran
// (docs/scaling.md#tenants-across-clusters). Every write starts with its
// claim, an insert into actions, which the foreign key to tenants refuses;
// the statement failed, so nothing was stored, and a retry is routed to
// the tenant's cluster.
func tenantGone(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503" && pgErr.ConstraintName == "actions_tenant_id_fkey"
}
