//go:build !unix

package pgembed

import (
	"errors"
	"os/exec"
)

// Supervising the server relies on POSIX signals and credentials; on other
// systems Start fails when it first needs them.

type account struct{ name string }

func lookupAccount(string) (*account, error)  { return nil, errors.ErrUnsupported }
func (*account) apply(*exec.Cmd)              {}
func (*account) checkSearchable(string) error { return errors.ErrUnsupported }
func (*account) chown(string) error           { return errors.ErrUnsupported }
func (*account) chownTree(string) error       { return errors.ErrUnsupported }
func detach(*exec.Cmd)                        {}
func processAlive(int) bool                   { return true }
func killProcess(int) error                   { return errors.ErrUnsupported }
func signalFastShutdown(int) error            { return errors.ErrUnsupported }
func signalImmediateShutdown(int) error       { return errors.ErrUnsupported }
