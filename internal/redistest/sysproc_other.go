//go:build unix && !linux

package redistest

import (
	"errors"
	"syscall"
)

// sysProcAttr puts a server in a process group of its own, which Kill ends with any child the
// server forked (a background save); own is Linux's (prioritize).
func sysProcAttr(own bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: own, Setpgid: !own}
}

// prioritize is Linux's only.
func prioritize(int) error { return errors.ErrUnsupported }
