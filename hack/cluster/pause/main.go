//go:build linux

// Command pause is the sandbox container of every pod in the local cluster (hack/cluster): it
// holds the pod's namespaces, reaps the zombies of a pod that shares its process namespace, and
// exits on SIGTERM or SIGINT. It stands in for the upstream pause image, which no registry can
// deliver to these machines.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reapChildren()
	}
}

// reapChildren collects every exited child: several may end behind one SIGCHLD.
func reapChildren() {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
