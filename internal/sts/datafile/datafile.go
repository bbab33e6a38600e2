package datafile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unsafe"
)

// The texts of these errors are the original server's answers.
var (
	// ErrIllegalName is a file name with '\', '/' or ':', or "." or "..".
	//lint:ignore ST1005 the wire protocol's text
	ErrIllegalName = errors.New("Illegal character found !")
	// ErrNameTooLong is a file name longer than MaxNameLength.
	//lint:ignore ST1005 the wire protocol's text
	ErrNameTooLong = errors.New("Maximum size reached (128) !")
	// ErrFileNotFound is a file to read that does not exist.
	//lint:ignore ST1005 the wire protocol's text
	ErrFileNotFound = errors.New("file not found !")
	// ErrInvalidPath is a file name to save that holds NUL.
	//lint:ignore ST1005 the wire protocol's text
	ErrInvalidPath = errors.New("Invalid file path")
)

// MaxNameLength is the longest file name INITFILE and SAVE accept, in UTF-16
// code units (Java's String.length()).
const MaxNameLength = 128

// ValidateName applies the INITFILE and SAVE rules to a file name: no '\',
// '/' or ':' anywhere and not exactly "." or ".." (ErrIllegalName, checked
// first), at most MaxNameLength UTF-16 code units (ErrNameTooLong). Spaces,
// NUL, "..foo" and "..." are legal: without a separator a name cannot leave
// the dataset directory.
func ValidateName(name string) error {
	if name == "." || name == ".." || strings.ContainsAny(name, `\/:`) {
		return ErrIllegalName
	}
	units := 0
	for _, r := range name {
		units += utf16Len(r)
	}
	if units > MaxNameLength {
		return ErrNameTooLong
	}
	return nil
}

func utf16Len(r rune) int {
	if r > 0xFFFF {
		return 2
	}
	return 1
}

// FileError is a file that exists but cannot be used, in the shape of Java's
// FileNotFoundException message: "adir (Is a directory)". Path is relative to
// the dataset directory ("." for the directory itself), or the path as given
// to ReadLinesFrom.
type FileError struct {
	Path   string
	Reason string
	// BadName says that the name leads to something that cannot be a data
	// file (a directory, a device, a name too long for the file system, a link
	// loop or a dangling link out of the dataset directory): the caller chose a
	// wrong name. Otherwise the file system failed (permissions, a full disk,
	// a missing dataset directory, ...).
	BadName bool
}

func (e *FileError) Error() string { return e.Path + " (" + e.Reason + ")" }

// fileError describes err, an error from an operation on the file shown as
// path, with the operating system's text for it ("Permission denied") and
// never the absolute path the error carries.
func fileError(path string, err error) *FileError {
	fe := &FileError{Path: path, BadName: badName(err)}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		fe.Reason = err.Error()
		return fe
	}
	// Go's texts for errno values are glibc's, lower-cased.
	reason := []rune(errno.Error())
	reason[0] = unicode.ToUpper(reason[0])
	fe.Reason = string(reason)
	return fe
}

// badName reports whether err says that a name leads to something that cannot
// be a data file, rather than that the file system failed.
func badName(err error) bool {
	for _, e := range []error{errLinkOutside, errExistingLinkOutside, syscall.EISDIR, syscall.ENAMETOOLONG, syscall.ELOOP, syscall.ENOTDIR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// TooLargeError is a file larger than the most bytes a caller accepts: it is
// refused before it is read, so that it cannot exhaust memory.
type TooLargeError struct {
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("file of %d bytes, larger than %d", e.Size, e.Max)
}

// ReadLines reads the INITFILE file name in dir and splits it into lines. A
// file that does not exist, or a name holding NUL, gives ErrFileNotFound; a
// file that exists but cannot be read (a directory, including dir itself for
// the name "", or an unreadable file), or a link leading out of dir, gives a
// *FileError; a file of more than maxBytes bytes, if maxBytes > 0, a
// *TooLargeError.
func ReadLines(dir, name string, cs Charset, maxBytes int64) ([]string, error) {
	lines, _, err := readDatasetFile(dir, name, cs, maxBytes, false)
	return lines, err
}

// ReadLinesDigest is ReadLines for a startup source (initFileAtStartup): it
// also returns the SHA-256 of the file's bytes (hex), as ReadLinesFrom does.
func ReadLinesDigest(dir, name string, cs Charset, maxBytes int64) (lines []string, sha256Hex string, err error) {
	return readDatasetFile(dir, name, cs, maxBytes, true)
}

// readDatasetFile reads the file name of the dataset directory dir: a link
// there is followed only as far as it stays in dir, as SAVE writes through one.
func readDatasetFile(dir, name string, cs Charset, maxBytes int64, digest bool) ([]string, string, error) {
	if strings.ContainsRune(name, 0) {
		return nil, "", ErrFileNotFound
	}
	shown := name
	if shown == "" {
		shown, name = ".", "."
	}
	return readLines(dir, name, shown, errExistingLinkOutside, cs, maxBytes, digest)
}

// ReadLinesFrom reads any file and splits it into lines, with the errors of
// ReadLines; a *FileError shows path as given. It also returns the SHA-256 of
// the file's bytes (hex), by which a startup source is told apart from another.
// A link at path is followed only as far as it stays in the directory that
// holds it (a mounted ConfigMap's links do): a volume a dataset comes from
// cannot lead the server to read, and clients to be served, its token or any
// other file it can read.
func ReadLinesFrom(path string, cs Charset, maxBytes int64) (lines []string, sha256Hex string, err error) {
	return readLines(filepath.Dir(path), filepath.Base(path), path, errLinkOutsideItsDirectory, cs, maxBytes, true)
}

// errLinkOutsideItsDirectory is a startup file that is a link leading out of
// the directory that holds it.
//
//lint:ignore ST1005 shown as Java shows a reason: "/data/x.csv (Link ...)"
var errLinkOutsideItsDirectory = errors.New("Link leads outside its directory")

// readLines reads the file name of dir and splits it, and with digest hashes
// it; errors show the path as shown, and a link leading out of dir the reason
// outside.
func readLines(dir, name, shown string, outside error, cs Charset, maxBytes int64, digest bool) (lines []string, sha256Hex string, err error) {
	content, err := readContent(dir, name, shown, outside, maxBytes)
	if err != nil {
		return nil, "", err
	}
	if !digest {
		return SplitLines(cs.Decode(content)), "", nil
	}
	// Hashing costs about what splitting does: do both at once. The hash reads
	// the string's bytes in place, which nothing writes.
	sum := make(chan [sha256.Size]byte, 1)
	go func() { sum <- sha256.Sum256(unsafe.Slice(unsafe.StringData(content), len(content))) }()
	lines = SplitLines(cs.Decode(content))
	hash := <-sum
	return lines, hex.EncodeToString(hash[:]), nil
}

// readContent reads the file name of dir, a regular file of at most maxBytes
// bytes (if maxBytes > 0), as a string; errors show the path as shown. A link
// is followed as SAVE follows one (linkTarget), and refused with the reason
// outside when it leads out of dir; the file it leads to is then opened through
// an os.Root of dir, which follows no link out of dir at any step, so that a
// link put in the way since cannot lead out either.
func readContent(dir, name, shown string, outside error, maxBytes int64) (string, error) {
	leadsOutside := &FileError{Path: shown, Reason: outside.Error(), BadName: true}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", ErrFileNotFound // Java's File.exists() is false whatever stat's error
	}
	rel := name
	if info, err := os.Lstat(filepath.Join(dir, name)); err == nil && info.Mode()&os.ModeSymlink != 0 {
		target, err := linkTarget(dir, filepath.Join(dir, name))
		switch {
		case errors.Is(err, errLinkOutside), errors.Is(err, errExistingLinkOutside):
			return "", leadsOutside
		case err != nil:
			return "", ErrFileNotFound
		}
		// os.Root refuses an absolute link even to a file inside: open the
		// file the chain ends at, by its path in the root.
		if rel, err = filepath.Rel(realDir, target); err != nil {
			return "", leadsOutside
		}
	}
	root, err := os.OpenRoot(realDir)
	if err != nil {
		return "", ErrFileNotFound
	}
	defer root.Close()
	// Stat before opening, so that a FIFO or a device is never opened; the
	// open's own Stat below is the check that holds.
	if _, err := root.Stat(rel); err != nil {
		if leadsOut(err) {
			return "", leadsOutside
		}
		return "", ErrFileNotFound
	}
	// O_NONBLOCK: a FIFO put in the file's place since the Stat does not hold
	// the open up; it is then refused as not regular.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if leadsOut(err) {
			return "", leadsOutside
		}
		return "", fileError(shown, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fileError(shown, err)
	}
	if info.IsDir() {
		return "", &FileError{Path: shown, Reason: "Is a directory", BadName: true}
	}
	if !info.Mode().IsRegular() {
		// Unlike Java, which would block on a FIFO or read a device forever.
		return "", &FileError{Path: shown, Reason: "Not a regular file", BadName: true}
	}
	if maxBytes > 0 && info.Size() > maxBytes {
		return "", &TooLargeError{Size: info.Size(), Max: maxBytes}
	}
	// Read straight into the string the lines will share: one allocation of
	// the file's size, no []byte copy.
	var content strings.Builder
	content.Grow(int(info.Size()))
	if _, err := io.Copy(&content, f); err != nil {
		return "", fileError(shown, err)
	}
	return content.String(), nil
}

// leadsOut reports whether err is an os.Root's refusal of a path that leads
// out of it: the only errors of its Stat and Open that are not the system's.
func leadsOut(err error) bool {
	var errno syscall.Errno
	return !errors.As(err, &errno)
}

// SplitLines splits text as Java's BufferedReader.readLine does: "\n", "\r\n"
// and a lone "\r" each end a line and are dropped; the last line needs no
// terminator and a final terminator adds no empty line; empty lines in the
// middle stay; nothing is trimmed. "" has no lines and "\n" one empty line.
// The lines are substrings of text and share its memory.
func SplitLines(text string) []string {
	lines := make([]string, 0, countLines(text))
	// The next '\n' and '\r' at or after pos (len(text) when there is none),
	// each searched for again only once pos has passed it.
	nextLF, nextCR := -1, -1
	for pos := 0; pos < len(text); {
		if nextLF < pos {
			nextLF = indexFrom(text, pos, '\n')
		}
		if nextCR < pos {
			nextCR = indexFrom(text, pos, '\r')
		}
		end := min(nextLF, nextCR)
		lines = append(lines, text[pos:end])
		pos = end + 1
		if end == nextCR && nextLF == end+1 { // \r\n is one terminator
			pos++
		}
	}
	return lines
}

func indexFrom(text string, from int, c byte) int {
	if i := strings.IndexByte(text[from:], c); i >= 0 {
		return from + i
	}
	return len(text)
}

// countLines is the number of lines SplitLines finds, so that the slice is
// allocated once at its final size.
func countLines(text string) int {
	n := strings.Count(text, "\n") + strings.Count(text, "\r") - strings.Count(text, "\r\n")
	if text != "" && text[len(text)-1] != '\n' && text[len(text)-1] != '\r' {
		n++ // the last line has no terminator
	}
	return n
}
