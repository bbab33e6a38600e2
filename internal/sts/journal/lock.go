package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// lockName is the lock file in a state directory. A server holds an exclusive flock(2) on it for
// as long as it uses the directory, and writes its process id and host name in it so that a
// second server can say who is in the way. The kernel releases the lock when the process ends,
// however it ends, so a crashed server never leaves the directory locked.
const lockName = "LOCK"

// How often a server waiting for the lock tries again, and says again that it waits.
const (
	lockRetry   = 200 * time.Millisecond
	lockLogEach = time.Minute
)

// LockedError is a state directory that another server holds.
type LockedError struct {
	Dir    string
	Holder string // "pid 42 on host-a", or "" when the holder has not said
}

func (e *LockedError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "a process that has not written its id yet"
	}
	return fmt.Sprintf("state directory %s is in use by another server (%s, lock file %s)", e.Dir, holder, filepath.Join(e.Dir, lockName))
}

// lockDir takes the lock of dir. When another process holds it, it fails with a *LockedError,
// or with wait tries again until it gets the lock or ctx ends, logging that it waits once a
// minute.
func lockDir(ctx context.Context, dir string, wait bool, log *slog.Logger) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	var logged time.Time
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		locked := &LockedError{Dir: dir, Holder: holder(f)}
		if !wait {
			f.Close()
			return nil, locked
		}
		if time.Since(logged) >= lockLogEach {
			log.Info("Waiting for the state directory", "dir", dir, "holder", locked.Holder)
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(lockRetry):
		}
	}
	host, _ := os.Hostname()
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteAt(fmt.Appendf(nil, "pid %d on %s\n", os.Getpid(), host), 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// holder reads who holds the lock file f.
func holder(f *os.File) string {
	b := make([]byte, 256)
	n, _ := f.ReadAt(b, 0)
	return strings.TrimSpace(string(b[:n]))
}
