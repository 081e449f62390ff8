package db

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncecall/oncecall/internal/fault"
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

// Unavailable reports whether err means PostgreSQL could not be reached or
// refused work for operational reasons, so that nothing was done and the
// caller may retry later.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57": // connection exception, insufficient resources, operator intervention
			return true
		}
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// Fault maps a storage failure to the client-facing vocabulary: an
// unreachable database is SERVICE_UNAVAILABLE (nothing was done; the caller
// may retry); errors that already carry a code, cancellations and anything
// else are returned as they are (internal errors stay internal).
func Fault(err error) error {
	var fe *fault.Error
	if errors.As(err, &fe) || errors.Is(err, context.Canceled) || !Unavailable(err) {
		return err
	}
	return fault.Wrap(fault.Unavailable, err, "the database is unavailable; nothing was done, retry later")
}
