//go:build unix && !linux

package pgembed

import "syscall"

// setParentDeathSignal is Linux-only; elsewhere a server whose owner crashed
// keeps running until stopped by hand.
func setParentDeathSignal(*syscall.SysProcAttr) {}
