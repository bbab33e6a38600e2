package datafile

import (
	"bufio"
	"errors"
	"io/fs"
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
// the temporary file removed. An existing target keeps its permissions.
//
// A symbolic link is written through, as Java's FileOutputStream writes: the
// file it leads to is replaced and the link stays, but only inside dir (the
// real directories compared): a link leading elsewhere, to an existing file or
// a missing one, is refused, so that SAVE never writes outside the dataset
// directory (where the journal or any other file of the server may be). The
// file is replaced by a rename in its real directory, which replaces a link
// put there meanwhile rather than following it.
//
// A name holding NUL gives ErrInvalidPath; a target that is a directory, a
// dangling link out of dir, or any I/O failure, a *FileError.
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
		if target, err = linkTarget(dir, target); err != nil {
			return fileError(shown, err)
		}
	}
	var keepMode *os.FileMode // an existing target's permissions
	if info, err := os.Stat(target); err == nil {
		if info.IsDir() {
			return &FileError{Path: shown, Reason: "Is a directory", BadName: true}
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

// errLinkOutside is a dangling link that leads out of the dataset directory.
//
//lint:ignore ST1005 shown to clients as Java shows a reason: "x.csv (Dangling link ...)"
var errLinkOutside = errors.New("Dangling link leads outside the dataset directory")

// errExistingLinkOutside is a link to an existing file outside the dataset directory: SAVE never
// writes there (it could reach the journal, or any file the server may write).
//
//lint:ignore ST1005 shown to clients as Java shows a reason
var errExistingLinkOutside = errors.New("Link leads outside the dataset directory")

// maxLinkHops is how many links a chain may hold, as Linux allows (then ELOOP).
const maxLinkHops = 40

// linkTarget returns the path of the file that the symbolic link at path
// leads to, through the real directory that holds it, if that directory is
// inside dir: the file itself if it exists (else errExistingLinkOutside); for
// a dangling link, the missing file at the end of the chain (else
// errLinkOutside).
func linkTarget(dir, path string) (string, error) {
	for hops := 0; ; hops++ {
		next, err := os.Readlink(path)
		if err != nil {
			break // path is no link: the file, or where it is missing
		}
		if hops == maxLinkHops {
			return "", syscall.ELOOP
		}
		if !filepath.IsAbs(next) {
			// Relative to the real directory of the link, as the kernel reads it.
			linkDir, err := filepath.EvalSymlinks(filepath.Dir(path))
			if err != nil {
				return "", err
			}
			next = filepath.Join(linkDir, next)
		}
		path = next
	}
	outside := errLinkOutside
	if _, err := os.Lstat(path); err == nil {
		outside = errExistingLinkOutside
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(root, parent); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", outside
	}
	return filepath.Join(parent, filepath.Base(path)), nil
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

// The names of SAVE's temporary files: tempPrefix, a random number, tempSuffix.
const (
	tempPrefix = ".sts-save-"
	tempSuffix = ".tmp"
)

// createTemp creates a new file for writing in dir. Unlike os.CreateTemp
// (0600) it gives the file the permissions Java gives a new file: 0666 less
// the umask.
func createTemp(dir string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		name := filepath.Join(dir, tempPrefix+strconv.FormatUint(rand.Uint64(), 36)+tempSuffix)
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
