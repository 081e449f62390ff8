//go:build !unix

package providersim

import "os"

// lockFile is a no-op where flock is unavailable: run one simulator per ledger.
func lockFile(*os.File) error { return nil }
