package api_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// TestMain runs the tests against PostgreSQL and, when the whole package
// ran, fails unless every operation of openapi.yaml answered some test with
// a 2xx: a documented operation that no test calls is not proven.
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		missing, err := apptest.Unanswered()
		if err != nil || len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test got a 2xx answer from these operations of openapi.yaml: %v %v\n", missing, err)
			code = 1
		}
	}
	os.Exit(code)
}
