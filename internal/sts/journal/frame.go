package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Journal segments and snapshots are both files of frames after an 8-byte magic. A frame is
//
//	[0:4]   payload length L, little endian
//	[4:8]   CRC-32C of bytes [0:4], which guards the length
//	[8:12]  CRC-32C of the payload
//	[12:12+L] payload
//
// The length's own checksum tells a damaged length (corruption) from a record that is whole but
// cut short by the end of the file (a torn write).
const frameHeader = 12

// maxFrame is the largest payload a frame may carry: its length must fit the header.
const maxFrame = 1<<32 - 1

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// beginFrame appends room for a frame header to b; finishFrame fills it in once the payload,
// everything appended after it, is complete.
func beginFrame(b []byte) ([]byte, int) {
	return append(b, make([]byte, frameHeader)...), len(b)
}

func finishFrame(b []byte, start int) error {
	payload := b[start+frameHeader:]
	if len(payload) > maxFrame {
		return fmt.Errorf("a record of %d bytes is larger than the %d a record may hold", len(payload), maxFrame)
	}
	h := b[start : start+frameHeader]
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:8], crc32.Checksum(h[0:4], crcTable))
	binary.LittleEndian.PutUint32(h[8:12], crc32.Checksum(payload, crcTable))
	return nil
}

// CorruptError is damage in a journal segment or a snapshot that a crash in the middle of a write
// cannot explain: a bad record before the end of a file, a record that does not apply, a
// snapshot that does not add up. The journal refuses to open on it rather than serve lists that
// may be wrong.
type CorruptError struct {
	Path   string // the damaged file
	Offset int64  // the byte offset of the damaged record in it
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s is corrupt at byte offset %d: %s", e.Path, e.Offset, e.Reason)
}

// errTorn marks the end of a file that holds the beginning of a record and nothing after it: the
// trace of a crash in the middle of a write, which a journal's last segment may have.
var errTorn = errors.New("torn record at the end of the file")

// frameReader reads the frames of a file held in memory.
type frameReader struct {
	path    string
	data    []byte
	off     int  // the offset of the next frame
	mayTear bool // the file may end with a torn record: the journal's last segment
}

// next returns the payload of the next frame; io.EOF at the end of the file; errTorn, with off
// at the torn record, if the file ends with one and may; a *CorruptError for other damage. The
// payload shares the reader's memory.
func (r *frameReader) next() ([]byte, error) {
	rest := r.data[r.off:]
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if len(rest) < frameHeader {
		return nil, r.damage("the record header is incomplete", len(rest))
	}
	n := binary.LittleEndian.Uint32(rest[0:4])
	if binary.LittleEndian.Uint32(rest[4:8]) != crc32.Checksum(rest[0:4], crcTable) {
		return nil, r.damage("the record length fails its checksum", 0)
	}
	if uint64(n) > uint64(len(rest)-frameHeader) {
		return nil, r.damage(fmt.Sprintf("the record of %d bytes runs past the end of the file", n), len(rest))
	}
	end := frameHeader + int(n)
	payload := rest[frameHeader:end]
	if binary.LittleEndian.Uint32(rest[8:12]) != crc32.Checksum(payload, crcTable) {
		return nil, r.damage("the record fails its checksum", end)
	}
	r.off += end
	return payload, nil
}

// damage classifies a bad record at off whose bytes run to off+extent. It is a torn write if the
// file may end with one and nothing but zeros follows (a file system may extend a file with
// zeros when it crashes before the data reaches the disk); anything else is corruption.
func (r *frameReader) damage(reason string, extent int) error {
	if r.mayTear && allZero(r.data[r.off+extent:]) {
		return errTorn
	}
	return r.corrupt(reason)
}

func (r *frameReader) corrupt(reason string) *CorruptError {
	return &CorruptError{Path: r.path, Offset: int64(r.off), Reason: reason}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
