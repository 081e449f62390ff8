//go:build unix

package api_test

import (
	"syscall"
	"testing"
)

// connectionBudget is how many connections the test may hold open: want, or
// fewer when the file descriptor limit would not allow it (both ends of each
// connection live in this process, beside the pools and the other tests).
func connectionBudget(t *testing.T, want int) int {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return want
	}
	n := min(want, (int(lim.Cur)-1024)/2)
	if n < 200 {
		t.Skipf("ulimit -n is %d: too low to hold many connections open", lim.Cur)
	}
	if n < want {
		t.Logf("ulimit -n is %d: holding %d connections instead of %d", lim.Cur, n, want)
	}
	return n
}
