package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TenantMove moves one tenant's rows from the cluster it lives on to
// another (docs/scaling.md#tenants-across-clusters): pause the tenant in
// the directory, let the servers see the pause, lock the tenant on the
// source (which waits for its requests still running there), copy every
// per-tenant table's rows of the tenant in one target transaction, verify
// counts and checksums, switch the directory, and delete the rows from the
// source.
type TenantMove struct {
	// Home holds the directory.
	Home *Store
	// Source and Target are connections to the cluster the tenant lives on
	// and to the one it moves to; TargetName names the target in the
	// directory ("" is the home cluster).
	Source, Target *pgx.Conn
	TargetName     string
	Tenant         uuid.UUID
	// Settle is how long every server takes to see the pause: the
	// directory's cache TTL and a margin.
	Settle time.Duration
	// Drain bounds the wait for the tenant's requests still running on the
	// source (their transactions hold the rows the move locks).
	Drain time.Duration
	// MaxPause is the pause's deadline: past it the tenant's requests are
	// served again where it was, and a move not yet switched gives up.
	MaxPause time.Duration
	// Progress, when set, is told each stage, a line each.
	Progress io.Writer
}

// MovedTable is one table's rows of the tenant that moved.
type MovedTable struct {
	Table string
	Rows  int64
}

// MoveResult is what a move did.
type MoveResult struct {
	Tables []MovedTable
	// Paused is how long the tenant's requests were paused, from the pause
	// to the switch.
	Paused time.Duration
}

// Rows is the number of rows moved.
func (r MoveResult) Rows() int64 {
	var n int64
	for _, t := range r.Tables {
		n += t.Rows
	}
	return n
}

// RefusedError is a move that changed nothing: the tenant was unpaused and
// stays where it was.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "move refused, nothing changed: " + e.Reason }

// notMoved are the tables with a tenant_id that stay where they are: the
// directory itself, and the operator console's staff, sessions and audit,
// which the home cluster's console serves for every tenant.
var notMoved = []string{"tenant_directory", "operators", "operator_links", "operator_sessions", "operator_audit"}

// movedTable is a table of the tenant's rows: its name, the column naming
// the tenant, the columns copied (every column but generated ones) and
// the sequences its columns take defaults from.
type movedTable struct {
	name, key string
	columns   []string
	sequences map[string]string // column → sequence
}

func (t movedTable) rows(tenant uuid.UUID) string {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	// tenant is a uuid.UUID: its text is safe in a literal (COPY takes no
	// parameters).
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s = '%s'", strings.Join(cols, ", "),
		pgx.Identifier{t.name}.Sanitize(), pgx.Identifier{t.key}.Sanitize(), tenant)
}

// Run moves the tenant. Before the switch any failure unpauses the tenant
// and leaves it where it was (the target's copy rolled back or deleted).
func (m TenantMove) Run(ctx context.Context) (res MoveResult, err error) {
	progress := func(s string) {
		if m.Progress != nil {
			fmt.Fprintf(m.Progress, "  %s\n", s)
		}
	}
	until, current, err := m.Home.PauseTenant(ctx, m.Tenant, m.MaxPause)
	if err != nil {
		return res, err
	}
	paused := time.Now()
	progress(fmt.Sprintf("paused until %s", until.UTC().Format(time.RFC3339)))
	switched := false
	defer func() {
		if !switched {
			if uerr := m.Home.UnpauseTenant(context.WithoutCancel(ctx), m.Tenant, until); uerr != nil {
				err = errors.Join(err, fmt.Errorf("unpause: %w", uerr))
			}
		}
	}()
	if current == m.TargetName {
		return res, &RefusedError{Reason: fmt.Sprintf("the tenant lives on %s already", clusterName(current))}
	}
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(m.Settle):
	}
	for _, c := range []*pgx.Conn{m.Source, m.Target} {
		// One text for each value on both sides, so checksums compare.
		if _, err := c.Exec(ctx, "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 3; SET bytea_output = 'hex'"); err != nil {
			return res, err
		}
	}
	tables, err := movedTables(ctx, m.Source)
	if err != nil {
		return res, err
	}
	targetTables, err := movedTables(ctx, m.Target)
	if err != nil {
		return res, err
	}
	if !sameTables(tables, targetTables) {
		return res, &RefusedError{Reason: "the two clusters' schemas differ: run `oncecall migrate` on both"}
	}

	src, err := m.Source.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer src.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if _, err := src.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(1, m.Drain.Milliseconds()))); err != nil {
		return res, err
	}
	progress("draining")
	// The tenant's row, then each of its rows: a request still running
	// holds some of them (every write starts with an insert that takes a
	// share lock on the tenant's row), so the lock waits for it; until the
	// move ends, no write of the tenant commits on the source.
	var found int
	if err := src.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE) t", m.Tenant).Scan(&found); err != nil {
		return res, refuseLock(err, m.Drain)
	}
	if found != 1 {
		return res, &RefusedError{Reason: "the tenant is not on the source cluster"}
	}
	for _, t := range tables {
		if _, err := src.Exec(ctx, fmt.Sprintf("SELECT 1 FROM %s WHERE %s = $1 FOR UPDATE",
			pgx.Identifier{t.name}.Sanitize(), pgx.Identifier{t.key}.Sanitize()), m.Tenant); err != nil {
			return res, refuseLock(err, m.Drain)
		}
	}
	var running, steps, staff int
	if err := src.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM actions WHERE tenant_id = $1 AND state <> 'completed'),
		(SELECT count(*) FROM action_steps WHERE tenant_id = $1 AND state IN ('pending', 'unknown')),
		(SELECT count(*) FROM operators WHERE tenant_id = $1)`, m.Tenant).Scan(&running, &steps, &staff); err != nil {
		return res, err
	}
	switch {
	case running > 0 || steps > 0:
		return res, &RefusedError{Reason: fmt.Sprintf("the tenant has %d actions running or unknown and %d remote steps not done; "+
			"let the reconciler finish them (or resolve them: oncecall actions list) and move it again", running, steps)}
	case staff > 0:
		return res, &RefusedError{Reason: fmt.Sprintf("%d console operators are limited to this tenant; the console's staff stay in the home cluster: "+
			"disable them (oncecall operator disable) or move them by hand first", staff)}
	}

	progress("copying")
	dst, err := m.Target.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer dst.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	// What an earlier move that failed after its copy left on the target
	// (the directory says the tenant does not live there).
	for _, t := range slices.Backward(tables) {
		if _, err := dst.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s = $1",
			pgx.Identifier{t.name}.Sanitize(), pgx.Identifier{t.key}.Sanitize()), m.Tenant); err != nil {
			return res, fmt.Errorf("clear %s on the target: %w", t.name, err)
		}
	}
	for _, t := range tables {
		n, err := copyRows(ctx, src, dst, t, m.Tenant)
		if err != nil {
			return res, fmt.Errorf("copy %s: %w", t.name, err)
		}
		res.Tables = append(res.Tables, MovedTable{Table: t.name, Rows: n})
		for col, seq := range t.sequences {
			// Rows keep their ids: the target's sequence goes past them.
			if _, err := dst.Exec(ctx, fmt.Sprintf("SELECT setval($1::regclass, GREATEST((SELECT last_value FROM %s), (SELECT max(%s) FROM %s)))",
				seq, pgx.Identifier{col}.Sanitize(), pgx.Identifier{t.name}.Sanitize()), seq); err != nil {
				return res, fmt.Errorf("advance %s: %w", seq, err)
			}
		}
	}
	progress("verifying")
	for _, t := range tables {
		a, err := checksum(ctx, src, t, m.Tenant)
		if err != nil {
			return res, err
		}
		b, err := checksum(ctx, dst, t, m.Tenant)
		if err != nil {
			return res, err
		}
		if a != b {
			return res, fmt.Errorf("verify %s: the source has %s, the target %s", t.name, a, b)
		}
	}
	if err := dst.Commit(ctx); err != nil {
		return res, fmt.Errorf("commit the copy: %w", err)
	}
	if err := m.Home.SwitchTenant(ctx, m.Tenant, until, m.TargetName); err != nil {
		// Not switched: the tenant stays on the source; its copy goes.
		return res, errors.Join(fmt.Errorf("switch: %w", err), deleteRows(context.WithoutCancel(ctx), m.Target, tables, m.Tenant))
	}
	switched = true
	res.Paused = time.Since(paused)
	progress("switched")
	for _, t := range slices.Backward(tables) {
		if _, err := src.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s = $1",
			pgx.Identifier{t.name}.Sanitize(), pgx.Identifier{t.key}.Sanitize()), m.Tenant); err != nil {
			return res, fmt.Errorf("the tenant lives on %s now, but deleting its rows from the source failed (delete them by hand): %s: %w",
				clusterName(m.TargetName), t.name, err)
		}
	}
	if err := src.Commit(ctx); err != nil {
		return res, fmt.Errorf("the tenant lives on %s now, but deleting its rows from the source failed (delete them by hand): %w",
			clusterName(m.TargetName), err)
	}
	return res, nil
}

func clusterName(c string) string {
	if c == "" {
		return "the home cluster"
	}
	return "cluster " + c
}

func refuseLock(err error, drain time.Duration) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "55P03" { // lock_not_available
		return &RefusedError{Reason: fmt.Sprintf("the tenant's requests still running on the source did not end within %s (--drain)", drain)}
	}
	return err
}

// movedTables lists the tables a move copies, parents before children: the
// tenants table (its row of the tenant) and every table with a tenant_id
// column but those of notMoved.
func movedTables(ctx context.Context, conn *pgx.Conn) ([]movedTable, error) {
	rows, err := conn.Query(ctx, `SELECT c.relname, array_agg(a.attname::text ORDER BY a.attnum),
			array_agg(COALESCE(pg_get_serial_sequence(quote_ident(c.relname), a.attname), '') ORDER BY a.attnum)
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND (c.relname = 'tenants' OR EXISTS (SELECT 1 FROM pg_attribute t
		       WHERE t.attrelid = c.oid AND t.attname = 'tenant_id' AND NOT t.attisdropped))
		  AND NOT c.relname = ANY ($1)
		GROUP BY c.relname ORDER BY c.relname`, notMoved)
	if err != nil {
		return nil, err
	}
	byName := map[string]movedTable{}
	var names []string
	for rows.Next() {
		var t movedTable
		var seqs []string
		if err := rows.Scan(&t.name, &t.columns, &seqs); err != nil {
			return nil, err
		}
		t.key, t.sequences = "tenant_id", map[string]string{}
		if t.name == "tenants" {
			t.key = "id"
		}
		for i, s := range seqs {
			if s != "" {
				t.sequences[t.columns[i]] = s
			}
		}
		byName[t.name] = t
		names = append(names, t.name)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Foreign keys between them: a table comes after the tables it
	// references.
	refs := map[string][]string{}
	frows, err := conn.Query(ctx, `SELECT c.relname, p.relname FROM pg_constraint k
		JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
		WHERE k.contype = 'f' AND k.conrelid <> k.confrelid`)
	if err != nil {
		return nil, err
	}
	for frows.Next() {
		var child, parent string
		if err := frows.Scan(&child, &parent); err != nil {
			return nil, err
		}
		if _, ok := byName[child]; ok {
			if _, ok := byName[parent]; ok {
				refs[child] = append(refs[child], parent)
			}
		}
	}
	if err := frows.Err(); err != nil {
		return nil, err
	}
	var out []movedTable
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("the foreign keys of %s form a cycle: a move cannot order its tables", n)
		case 2:
			return nil
		}
		state[n] = 1
		for _, p := range refs[n] {
			if err := visit(p); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, byName[n])
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sameTables(a, b []movedTable) bool {
	return slices.EqualFunc(a, b, func(x, y movedTable) bool {
		return x.name == y.name && slices.Equal(x.columns, y.columns)
	})
}

// copyRows streams the tenant's rows of t from the source's transaction
// into the target's with COPY.
func copyRows(ctx context.Context, src, dst pgx.Tx, t movedTable, tenant uuid.UUID) (int64, error) {
	pr, pw := io.Pipe()
	out := make(chan error, 1)
	go func() {
		_, err := src.Conn().PgConn().CopyTo(ctx, pw, "COPY ("+t.rows(tenant)+") TO STDOUT")
		pw.CloseWithError(err)
		out <- err
	}()
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	tag, err := dst.Conn().PgConn().CopyFrom(ctx, pr, fmt.Sprintf("COPY %s (%s) FROM STDIN", pgx.Identifier{t.name}.Sanitize(), strings.Join(cols, ", ")))
	pr.CloseWithError(errors.New("copy ended"))
	if oerr := <-out; oerr != nil && err == nil {
		err = oerr
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// checksum is the count and an MD5 of the tenant's rows of t, in a
// stable order.
func checksum(ctx context.Context, tx pgx.Tx, t movedTable, tenant uuid.UUID) (string, error) {
	var n int64
	var sum string
	err := tx.QueryRow(ctx, "SELECT count(*), COALESCE(md5(string_agg(r::text, E'\\n' ORDER BY r::text)), '') FROM ("+t.rows(tenant)+") r").Scan(&n, &sum)
	if err != nil {
		return "", fmt.Errorf("checksum %s: %w", t.name, err)
	}
	return fmt.Sprintf("%d rows (md5 %s)", n, sum), nil
}

func deleteRows(ctx context.Context, conn *pgx.Conn, tables []movedTable, tenant uuid.UUID) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, t := range slices.Backward(tables) {
			if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s = $1",
				pgx.Identifier{t.name}.Sanitize(), pgx.Identifier{t.key}.Sanitize()), tenant); err != nil {
				return fmt.Errorf("delete the copy of %s from the target: %w", t.name, err)
			}
		}
		return nil
	})
}
