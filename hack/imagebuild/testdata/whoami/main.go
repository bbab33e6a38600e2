// Command whoami stands in for the image's binaries in the containerd test: it prints what the
// container runtime gave it (user, group, working directory, whether /tmp is writable).
package main

import (
	"fmt"
	"os"
	"os/user"
)

func main() {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	wd, _ := os.Getwd()
	tmpErr := os.WriteFile("/tmp/probe", []byte("x"), 0o600)
	fmt.Printf("argv0=%s uid=%d gid=%d user=%s wd=%s tmp-writable=%v\n", os.Args[0], os.Getuid(), os.Getgid(), name, wd, tmpErr == nil)
}
