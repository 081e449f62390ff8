package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// A COMMIT under synchronous replication waits until a synchronous standby
// has flushed it; meanwhile no other session sees its rows, and a claim of
// the same key waits for it. Cancelling that wait (a CancelRequest, which
// pgx sends when a context ends; pg_cancel_backend; pg_terminate_backend)
// does not undo the commit: PostgreSQL ends the statement successfully with
// only a WARNING, "canceling wait for synchronous replication ... The
// transaction has already committed locally, but might not have been
// replicated to the standby". Its rows are then visible on the primary and
// missing on the standby a failover would promote. So:
//
//   - no request's context reaches a COMMIT: it runs on a context of its
//     own (commitLimit), and a request that cannot wait for it any longer
//     (its context ends, or commitWait passes) is answered "outcome unknown"
//     while the COMMIT goes on;
//   - that WARNING on the connection makes the outcome unknown;
//   - an answer that confirms from a row this request did not commit itself
//     first waits until that row is replicated (Store.Replicated).

const (
	// commitWait is how long a request waits for its COMMIT's answer
	// before it is answered "outcome unknown" (503; pending on a voice
	// call). A synchronous commit takes milliseconds; during a failover it
	// waits until a standby is synchronous again.
	commitWait = 10 * time.Second
	// commitLimit bounds a COMMIT nobody waits for any more. Past it the
	// connection is closed; the request was answered "unknown" already, and
	// a later replay checks that the commit is replicated.
	commitLimit = 2 * time.Minute
	// replicatedWait bounds Store.Replicated.
	replicatedWait = 5 * time.Second
)

// syncRepCancelled is the key, in a connection's CustomData, of the flag
// its notice handler sets when PostgreSQL cancelled a wait for synchronous
// replication.
const syncRepCancelled = "oncecall.syncrep_cancelled"

// WatchReplication makes every connection of a pool note the WARNING
// PostgreSQL sends when a COMMIT's wait for the synchronous standby was
// cancelled, and drop a connection whose server answered that it is
// read-only (a demoted primary): the pool dials again, and with
// target_session_attrs=read-write it finds the new primary.
func WatchReplication(cfg *pgxpool.Config) {
	cc := &cfg.ConnConfig.Config
	onNotice := cc.OnNotice
	cc.OnNotice = func(c *pgconn.PgConn, n *pgconn.Notice) {
		if syncRepWarning(n) {
			c.CustomData()[syncRepCancelled] = true
		}
		if onNotice != nil {
			onNotice(c, n)
		}
	}
	onPgError := cc.OnPgError
	cc.OnPgError = func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == readOnlyTransaction {
			return false
		}
		if onPgError != nil {
			return onPgError(c, e)
		}
		return !strings.EqualFold(e.Severity, "FATAL")
	}
}

// readOnlyTransaction is SQLSTATE 25006: a write sent to a server that
// accepts none (a standby, or a primary being demoted).
const readOnlyTransaction = "25006"

// syncRepWarning reports whether n is a WARNING. PostgreSQL gives the
// cancelled wait for synchronous replication no code of its own (01000,
// any warning) and may translate its message, so every WARNING received
// during a statement that commits counts; oncecall's statements raise no
// other.
func syncRepWarning(n *pgconn.Notice) bool {
	return n.SeverityUnlocalized == "WARNING" || n.SeverityUnlocalized == "" && n.Severity == "WARNING"
}

// watchCommit clears conn's flag before a statement that commits.
func watchCommit(conn *pgconn.PgConn) { delete(conn.CustomData(), syncRepCancelled) }

// errSyncRepCancelled: the server committed locally but the wait for the
// synchronous standby was cancelled.
var errSyncRepCancelled = errors.New("PostgreSQL cancelled the wait for the synchronous standby: the commit is on the primary and may be missing on the standby")

// commitCancelled reports (and clears) the flag WatchReplication's notice
// handler set on conn during the last statement.
func commitCancelled(conn *pgconn.PgConn) bool {
	data := conn.CustomData()
	_, ok := data[syncRepCancelled]
	delete(data, syncRepCancelled)
	return ok
}

// detach runs commit, a step that sends COMMIT (or a statement that commits
// when it ends) on conn, on a goroutine of its own (see runners) and a
// context that the request's does not cancel, and releases conn when it is
// done. It returns commit's answer, classified by afterCommit, or, when the
// request's ctx ends or commitWait passes first, an unknown outcome while
// the commit goes on. A cancelled wait for the synchronous standby reported
// on conn makes a successful commit unknown too.
func detach(ctx context.Context, conn *pgxpool.Conn, commit func(ctx context.Context) error) error {
	done := make(chan error, 1)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitLimit)
	pc := conn.Conn().PgConn()
	watchCommit(pc)
	commitRunners.run(func() {
		defer cancel()
		err := commit(cctx)
		if err == nil && commitCancelled(pc) {
			err = &commitUnknownError{err: errSyncRepCancelled}
		} else if err != nil {
			err = afterCommit(err)
		}
		conn.Release()
		done <- err
	})
	wait := time.NewTimer(commitWait)
	defer wait.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // finished at the same moment: its answer holds
			return err
		default:
		}
		return &commitUnknownError{err: fmt.Errorf("the request ended while its COMMIT was still waiting: %w", context.Cause(ctx))}
	case <-wait.C:
		return &commitUnknownError{err: fmt.Errorf("the COMMIT did not answer within %s", commitWait)}
	}
}

// noSyncFor is how long Replicated trusts a reading of no synchronous
// standby (see Replicated).
const noSyncFor = 500 * time.Millisecond

// notReplicatedError: a stored action could not be shown to be on the
// synchronous standby.
type notReplicatedError struct{ err error }

func (e *notReplicatedError) Error() string {
	return "the stored action is not known to be replicated to the synchronous standby: " + e.err.Error()
}

func (e *notReplicatedError) Unwrap() error { return e.err }

// NotReplicated reports whether err is Replicated's: the action may be
// lost by a failover, so an answer confirming it would be premature.
func NotReplicated(err error) bool {
	var e *notReplicatedError
	return errors.As(err, &e)
}

// Replicated returns once every commit visible to a new transaction is on
// the synchronous standbys, so that an answer built from a row this
// request did not commit itself (a replay, a status check) survives a
// failover: that row's commit may have had its wait for the standby
// cancelled. It commits a transaction that waits for the standbys up to a
// later point of the WAL (dbsqlc's AwaitReplication); when no synchronous
// standby is configured it costs one round trip and writes nothing. It
// waits at most replicatedWait (less when ctx ends first) and then fails
// with NotReplicated, as it does on any error.
//
// A server found without a synchronous standby is taken at its word for
// noSyncFor: no commit waited for a standby there, so none can have had
// that wait cancelled, and replays skip the round trip meanwhile. A
// standby configured within that time (Patroni's non-strict synchronous
// mode re-enabling one) is waited for from the next check on; the commits
// made before it never were protected by it. Under synchronous_mode_strict
// the setting is never empty and every check waits.
func (s *Store) Replicated(ctx context.Context) error {
	if time.Now().UnixNano() < s.noSyncUntil.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, replicatedWait)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return &notReplicatedError{err: fmt.Errorf("acquire connection: %w", err)}
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	watchCommit(pc)
	// Cancelling this transaction's wait is harmless: it wrote nothing of
	// value. Its WARNING only says the standby did not catch up.
	waited, err := dbsqlc.New(conn).AwaitReplication(ctx)
	if err == nil && commitCancelled(pc) {
		err = errSyncRepCancelled
	}
	if err != nil {
		return &notReplicatedError{err: err}
	}
	if !waited {
		s.noSyncUntil.Store(time.Now().Add(noSyncFor).UnixNano())
	}
	return nil
}
