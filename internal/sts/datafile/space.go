package datafile

import (
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
