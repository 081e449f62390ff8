//go:build unix

package providersim

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, so two simulators never
// append to one ledger. The kernel drops it when the process dies.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
