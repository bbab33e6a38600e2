package datafile

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// A file the server may not read is a FileError saying so. CI runs as root, who reads any file:
// the read then runs on a thread that has given up the capabilities that let it, as a non-root
// server's would be.
func TestReadLinesPermissionDenied(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "secret.csv"), []byte("x"), 0o000))
	var err error
	asNonRoot(t, func() { _, err = ReadLines(dir, "secret.csv", Charset{}, 0) })
	if want := (&FileError{Path: "secret.csv", Reason: "Permission denied"}); !reflect.DeepEqual(err, want) {
		t.Errorf("ReadLines = %v, want %v", err, want)
	}
}

// asNonRoot runs f on an OS thread of its own without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH.
// The thread is never unlocked, so it ends with its goroutine and no other code runs on it.
func asNonRoot(t *testing.T, f func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		header := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&header, &data[0]); err != nil {
			done <- err
			return
		}
		for _, c := range []uint{unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH} {
			data[c/32].Effective &^= 1 << (c % 32)
		}
		if err := unix.Capset(&header, &data[0]); err != nil {
			done <- err
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("dropping the file capabilities: %v", err)
	}
}
