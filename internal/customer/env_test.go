package customer_test

import (
	"os"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/coretest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// env is a store on a fresh database, a core on it and a tenant.
type env struct{ coretest.Env }

func setup(t *testing.T) env { t.Helper(); return env{coretest.Setup(t)} }

// answerOf is v as an answer writes it (coretest.AnswerOf).
func answerOf(t *testing.T, v any) []byte { t.Helper(); return coretest.AnswerOf(t, v) }
