package booking_test

import (
	"os"
	"testing"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/coretest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// env is a store on a fresh database, a core on it and a tenant.
type env struct{ coretest.Env }

func setup(t *testing.T) env { t.Helper(); return env{coretest.Setup(t)} }

// answerOf is v as an answer writes it (coretest.AnswerOf).
func answerOf(t *testing.T, v any) []byte { t.Helper(); return coretest.AnswerOf(t, v) }

// setupWithTimeouts is setup with the pool's connections starting with
// timeouts, as the server's do.
func setupWithTimeouts(t *testing.T, timeouts db.Timeouts) env {
	t.Helper()
	return env{coretest.SetupWithTimeouts(t, timeouts)}
}
