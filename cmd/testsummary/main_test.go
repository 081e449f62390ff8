package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// Events as go test -json writes them for a package with a passing, a
// failing and a skipped test (one skipped subtest).
const events = `{"Action":"start","Package":"x/p"}
{"Action":"run","Package":"x/p","Test":"TestA"}
{"Action":"output","Package":"x/p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"x/p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"x/p","Test":"TestA"}
{"Action":"run","Package":"x/p","Test":"TestB"}
{"Action":"output","Package":"x/p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"x/p","Test":"TestB","Output":"    p_test.go:18: broken\n"}
{"Action":"output","Package":"x/p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"x/p","Test":"TestB"}
{"Action":"run","Package":"x/p","Test":"TestC/sub"}
{"Action":"output","Package":"x/p","Test":"TestC/sub","Output":"=== RUN   TestC/sub\n"}
{"Action":"output","Package":"x/p","Test":"TestC/sub","Output":"    p_test.go:20: needs pgbouncer: CI installs it\n"}
{"Action":"output","Package":"x/p","Test":"TestC/sub","Output":"    --- SKIP: TestC/sub (0.00s)\n"}
{"Action":"skip","Package":"x/p","Test":"TestC/sub"}
{"Action":"output","Package":"x/p","Output":"FAIL\n"}
{"Action":"output","Package":"x/p","Output":"FAIL\tx/p\t0.062s\n"}
{"Action":"fail","Package":"x/p"}
{"Action":"output","Package":"x/q","Output":"PASS\n"}
{"Action":"output","Package":"x/q","Output":"ok  \tx/q\t0.01s\n"}
{"Action":"pass","Package":"x/q"}
`

func TestReportPrintsSkipsAndFailures(t *testing.T) {
	var out bytes.Buffer
	skips, failed := report(strings.NewReader(events), &out)
	if !failed {
		t.Error("a failed test was not reported as a failure")
	}
	if want := []string{"x/p TestC/sub: needs pgbouncer: CI installs it"}; !slices.Equal(skips, want) {
		t.Errorf("skips %q, want %q", skips, want)
	}
	want := "--- FAIL: TestB (0.00s)\n    p_test.go:18: broken\nFAIL\nFAIL\tx/p\t0.062s\nok  \tx/q\t0.01s\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
}
