package telemetry_test

import (
	"os"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/buildtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	os.Exit(buildtest.Main(m, pgtest.Main))
}
