package pgembed

import "syscall"

// setParentDeathSignal asks for a fast shutdown if this process dies without
// stopping the server, so crashed tests do not leak servers. Linux delivers
// it when the forking OS thread exits, which for Go means only if the caller
// had locked its goroutine to that thread.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGINT
}
