package idem_test

import (
	"context"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
)

// run is an idem.Work of Go writes, for tests.
type run func(ctx context.Context, tx *db.Tx, x idem.Exec) (idem.Result, error)

func (r run) OneStatement() bool                 { return false }
func (r run) Statement(*db.Statement, idem.Exec) { panic("run has no statement") }
func (r run) Run(ctx context.Context, tx *db.Tx, x idem.Exec) (idem.Result, error) {
	return r(ctx, tx, x)
}
func (r run) Reserve(context.Context, *db.Tx, idem.Exec, []db.NewStep) (*idem.Result, error) {
	return nil, nil
}

// statement is an idem.Work of one statement, for tests.
type statement func(s *db.Statement, x idem.Exec)

func (f statement) OneStatement() bool                     { return true }
func (f statement) Statement(s *db.Statement, x idem.Exec) { f(s, x) }
func (f statement) Run(context.Context, *db.Tx, idem.Exec) (idem.Result, error) {
	panic("a statement runs no Go")
}
func (f statement) Reserve(context.Context, *db.Tx, idem.Exec, []db.NewStep) (*idem.Result, error) {
	return nil, nil
}

// stale is an idem.Staleness, for tests.
type stale func(ctx context.Context, a oncecall.Action) (bool, error)

func (f stale) Stale(ctx context.Context, a oncecall.Action) (bool, error) { return f(ctx, a) }
