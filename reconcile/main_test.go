package reconcile_test

import (
	"os"
	"testing"

	"github.com/oncecall/oncecall/internal/buildtest"
	"github.com/oncecall/oncecall/internal/pgtest"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
)

func TestMain(m *testing.M) {
	os.Exit(buildtest.Main(m, func(m *testing.M) int {
		code := pgtest.Main(m)
		calsimtest.Remove()
		return code
	}))
}
