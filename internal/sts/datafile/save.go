package datafile

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/text/transform"
)

// TimestampedName is the file name SAVE uses with ADD_TIMESTAMP: t in local
// time as yyyyMMdd'T'HH'h'mm'm'ss's.' followed by name, e.g.
// "20261129T22h51m35s.logins.csv".
func TimestampedName(t time.Time, name string) string {
	return t.Local().Format("20060102T15h04m05s.") + name
}

// Save writes lines to the file name in dir, each followed by "\n" (no lines
// make an empty file), encoded in cs. A character cs cannot represent becomes
// '?', as in Java; in UTF-8 the lines' bytes are written as they are.
//
// The write is atomic: the lines go to a temporary file in the target's
// directory, which is synced and renamed over the target, then the directory
// is synced. If anything fails before the rename, the target is unchanged and
// the temporary file removed. A symbolic link is written through (its target
// is replaced) and an existing target keeps its permissions.
//
// A name holding NUL gives ErrInvalidPath; a target that is a directory, or
// any I/O failure, a *FileError.
func Save(dir, name string, lines []string, cs Charset) error {
	if strings.ContainsRune(name, 0) {
		return ErrInvalidPath
	}
	shown := name
	if shown == "" {
		shown = "."
	}
	target := filepath.Join(dir, name)
	if info, err := os.Lstat(target); err == nil && info.Mode()&os.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(target); err != nil {
			return fileError(shown, err)
		}
	}
	var keepMode *os.FileMode // an existing target's permissions
	if info, err := os.Stat(target); err == nil {
		if info.IsDir() {
			return &FileError{Path: shown, Reason: "Is a directory"}
		}
		mode := info.Mode().Perm()
		keepMode = &mode
	}
	if err := replace(target, lines, cs, keepMode); err != nil {
		return fileError(shown, err)
	}
	if err := syncDir(filepath.Dir(target)); err != nil {
		return fileError(shown, err)
	}
	return nil
}

// replace writes the lines to a temporary file next to target and renames it
// over target; on failure it removes the temporary file.
func replace(target string, lines []string, cs Charset, keepMode *os.FileMode) (err error) {
	tmp, err := createTemp(filepath.Dir(target))
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = writeLines(tmp, lines, cs); err != nil {
		return err
	}
	if keepMode != nil {
		if err = tmp.Chmod(*keepMode); err != nil {
			return err
		}
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// createTemp creates a new file for writing in dir. Unlike os.CreateTemp
// (0600) it gives the file the permissions Java gives a new file: 0666 less
// the umask.
func createTemp(dir string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		name := filepath.Join(dir, ".sts-save-"+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) && attempt < 100 {
			continue
		}
		return f, err
	}
}

func writeLines(f *os.File, lines []string, cs Charset) error {
	encoded := transform.NewWriter(f, cs.NewEncoder())
	buf := bufio.NewWriterSize(encoded, 64<<10)
	for _, line := range lines {
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	if err := buf.Flush(); err != nil { // a failed write sticks, so one check is enough
		return err
	}
	return encoded.Close() // flushes the encoder; the file stays open
}

// syncDir makes the rename in dir durable. File systems that cannot sync a
// directory (EINVAL) are taken as they are.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
