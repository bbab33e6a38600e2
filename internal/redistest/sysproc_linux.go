package redistest

import (
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts a server in a process group of its own, which Kill ends with any child the
// server forked (a background save), and with own a session of its own too, whose scheduling
// group prioritize raises. Outside the test's group, a server misses the terminal's Ctrl-C:
// Pdeathsig kills it instead when the test binary dies without its cleanups (an interrupt, a
// -timeout).
func sysProcAttr(own bool) *syscall.SysProcAttr {
	// A session's leader leads its process group too, and may not change it (setpgid fails).
	return &syscall.SysProcAttr{Setsid: own, Setpgid: !own, Pdeathsig: syscall.SIGKILL}
}

// prioritize gives the scheduling group of process pid, which leads a session of its own, the
// highest weight.
func prioritize(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/autogroup", []byte("-20"), 0)
}
