package reconcile_test

import (
	"os"
	"testing"

	"github.com/oncecall/oncecall/internal/buildtest"
	"github.com/oncecall/oncecall/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(buildtest.Main(m, pgtest.Main)) }
