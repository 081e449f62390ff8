package console_test

import (
	"os"
	"testing"

	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/testkit/buildtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	os.Exit(buildtest.Main(m, func(m *testing.M) int {
		code := pgtest.Main(m)
		calsimtest.Remove()
		return code
	}))
}
