package datafile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FreeBytes is the space an unprivileged process may still write in the file system of dir.
func FreeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // the field types differ by platform
}

// EncodedSize is at least the size of the file Save writes from lines in cs: each line and its
// "\n", their UTF-8 bytes counted twice in UTF-16 and four times in UTF-32 (a bound, not exact).
func EncodedSize(lines []string, cs Charset) int64 {
	var n int64
	for _, line := range lines {
		n += int64(len(line)) + 1
	}
	switch name := strings.ToUpper(cs.Name()); {
	case strings.Contains(name, "32"):
		n *= 4
	case strings.Contains(name, "16"):
		n *= 2
	}
	return n
}

// RemoveSaveLeftovers removes the temporary files that SAVEs interrupted by a crash left in dir
// (".sts-save-*.tmp", never renamed over their target) and returns their names.
func RemoveSaveLeftovers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, tempPrefix) || !strings.HasSuffix(name, tempSuffix) || e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// NoSpace reports whether err is a file system out of space (ENOSPC), as Save's *FileError too.
func NoSpace(err error) bool {
	var fe *FileError
	return errors.Is(err, syscall.ENOSPC) || errors.As(err, &fe) && fe.Reason == "No space left on device"
}
