package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncecall/oncecall/internal/fault"
)

// Every way a connection can fail maps to 503; whether the answer may say
// "nothing was stored" depends only on whether a COMMIT had been sent.
func TestFaultClassifiesConnectionLoss(t *testing.T) {
	t.Parallel()
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	pipe := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	pgErr := func(code, severity string) error {
		return &pgconn.PgError{Code: code, Severity: severity, SeverityUnlocalized: severity}
	}
	const (
		internal = "internal"
		nothing  = "nothing was stored"
		unknown  = "outcome is unknown"
	)
	cases := []struct {
		name   string
		err    error
		commit bool // the error came back from a sent COMMIT
		want   string
	}{
		{"unexpected EOF", io.ErrUnexpectedEOF, false, nothing},
		{"EOF", io.EOF, false, nothing},
		{"connection reset", reset, false, nothing},
		{"broken pipe", pipe, false, nothing},
		{"closed connection", net.ErrClosed, false, nothing},
		{"pgconn closed", pgconn.ErrConnClosed, false, nothing},
		{"deadline", context.DeadlineExceeded, false, nothing},
		{"lock timeout", pgErr("55P03", "ERROR"), false, nothing},
		{"statement timeout", pgErr("57014", "ERROR"), false, nothing},
		{"idle in transaction timeout", pgErr("25P03", "FATAL"), false, nothing},
		{"too many connections", pgErr("53300", "FATAL"), false, nothing},
		{"admin shutdown", pgErr("57P01", "FATAL"), false, nothing},
		{"check violation", pgErr("23514", "ERROR"), false, internal},
		{"a bug", errors.New("boom"), false, internal},

		{"unexpected EOF at commit", io.ErrUnexpectedEOF, true, unknown},
		{"reset at commit", reset, true, unknown},
		{"closed at commit", net.ErrClosed, true, unknown},
		{"deadline at commit", context.DeadlineExceeded, true, unknown},
		{"shutdown at commit", pgErr("57P01", "FATAL"), true, unknown},
		{"serialization failure at commit", pgErr("40001", "ERROR"), true, internal},
		{"statement timeout at commit", pgErr("57014", "ERROR"), true, nothing},
		{"commit answered rollback", pgx.ErrTxCommitRollback, true, internal},
	}
	for _, c := range cases {
		err := fmt.Errorf("claim action: %w", c.err)
		if c.commit {
			err = fmt.Errorf("commit: %w", afterCommit(c.err))
		}
		fe := fault.As(Fault(err))
		got := internal
		if fe.Code == fault.Unavailable {
			switch {
			case strings.Contains(fe.Message, nothing):
				got = nothing
			case strings.Contains(fe.Message, unknown):
				got = unknown
			default:
				t.Errorf("%s: 503 message says neither: %q", c.name, fe.Message)
			}
		} else if fe.Code != fault.Internal {
			t.Errorf("%s: code %s", c.name, fe.Code)
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestFaultKeepsCodesAndCancellations(t *testing.T) {
	t.Parallel()
	coded := fault.New(fault.InvalidInput, "bad")
	if got := Fault(coded); got != coded {
		t.Errorf("a coded error became %v", got)
	}
	if got := Fault(context.Canceled); !errors.Is(got, context.Canceled) || fault.CodeOf(got) != fault.Internal {
		t.Errorf("a cancellation became %v", got)
	}
	if Fault(nil) != nil {
		t.Error("nil became an error")
	}
	if !LockTimeout(fmt.Errorf("x: %w", &pgconn.PgError{Code: "55P03"})) || LockTimeout(io.EOF) {
		t.Error("LockTimeout")
	}
}
