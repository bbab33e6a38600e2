package redistest

import "syscall"

// sysProcAttr puts a server in a process group of its own, which Kill ends with any child the
// server forked (a background save). Outside the test's group, a server misses the terminal's
// Ctrl-C: Pdeathsig kills it instead when the test binary dies without its cleanups (an
// interrupt, a -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
