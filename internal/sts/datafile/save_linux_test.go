package datafile

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A write that fails half way (here the file size limit, as a full disk
// would) leaves the target as it was and no temporary file behind.
func TestSaveFailingWriteLeavesTargetUnchanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.csv")
	must(t, os.WriteFile(path, []byte("precious\n"), 0o644))

	signal.Ignore(syscall.SIGXFSZ) // get EFBIG instead of being killed
	defer signal.Reset(syscall.SIGXFSZ)
	var limit syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit))
	small := limit
	small.Cur = 100_000
	must(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small))
	lines := make([]string, 10_000)
	for i := range lines {
		lines[i] = strings.Repeat("x", 99)
	}
	err := Save(dir, "data.csv", lines, Charset{})
	must(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit))

	if want := "data.csv (File too large)"; err == nil || err.Error() != want {
		t.Errorf("Save = %v, want %q", err, want)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "precious\n" {
		t.Errorf("target holds %q, %v", got, err)
	}
	assertOnlyFiles(t, dir, "data.csv")
}
