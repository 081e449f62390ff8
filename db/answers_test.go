package db_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// The answers of the local operations' statements are written in the
// statements' own text (queries/*.sql), not by functions a migration
// defines: renaming an answer's field needs no migration. The schema keeps
// only oncecall_key_free, the wait for a key those statements share.
func TestNoAnswerIsBuiltByAFunctionOfTheSchema(t *testing.T) {
	t.Parallel()
	conn, err := pgx.Connect(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), `SELECT proname FROM pg_proc WHERE proname LIKE 'oncecall\_%' ORDER BY proname`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// oncecall_action_tenant is the trigger that fills the tenant_id of an action's steps and
	// events (migration 0035); it builds no answer.
	if len(names) != 2 || names[0] != "oncecall_action_tenant" || names[1] != "oncecall_key_free" {
		t.Fatalf("functions of the schema: %v, want only oncecall_action_tenant and oncecall_key_free", names)
	}
}
