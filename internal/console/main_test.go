package console_test

import (
	"os"
	"testing"

	"github.com/oncecall/oncecall/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
