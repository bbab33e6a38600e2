//go:build unix && !linux

package redistest

import "syscall"

// sysProcAttr puts a server in a process group of its own, which Kill ends with any child the
// server forked (a background save).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
