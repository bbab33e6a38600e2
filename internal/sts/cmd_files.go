package sts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/form"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The commands that move lists between files and the store. File I/O runs outside any list
// lock: INITFILE reads the whole file before it replaces the list, SAVE writes a copy.

func (s *Server) initFile(req *request) reply {
	lines, _, fail := s.readDatasetFile(req.list, false)
	if fail != nil {
		return *fail
	}
	n := len(lines)
	// A client's INITFILE is no dataset source: the list's digest goes.
	if err := s.store.Replace(req.ctx, req.list, lines, ""); err != nil {
		return storeFailure(protocol.CmdInitFile, req.list, err)
	}
	return okLength(protocol.CmdInitFile, n)
}

// readDatasetFile reads the dataset file name, for INITFILE and the startup loading of
// initFileAtStartup: its lines and, with digest (a startup source), the SHA-256 (hex) of its
// content, or INITFILE's KO.
func (s *Server) readDatasetFile(name string, digest bool) ([]string, string, *reply) {
	fail := func(rep reply) ([]string, string, *reply) { return nil, "", &rep }
	if err := datafile.ValidateName(name); err != nil {
		return fail(nameFailure(protocol.CmdInitFile, err))
	}
	if rep := s.reserved(protocol.CmdInitFile, name); rep != nil {
		return fail(*rep)
	}
	var lines []string
	var sum string
	var err error
	if digest {
		lines, sum, err = datafile.ReadLinesDigest(s.cfg.DatasetDir, name, s.charset.read, s.cfg.Limits.MaxTotalBytes)
	} else {
		lines, err = datafile.ReadLines(s.cfg.DatasetDir, name, s.charset.read, s.cfg.Limits.MaxTotalBytes)
	}
	var tooLarge *datafile.TooLargeError
	switch {
	case errors.Is(err, datafile.ErrFileNotFound):
		return fail(ko(protocol.CmdInitFile, http.StatusNotFound, protocol.ReasonFileNotFound, "file not found !"))
	case errors.As(err, &tooLarge):
		return fail(koLimit(protocol.CmdInitFile, store.LimitTotalBytes, tooLarge.Max))
	case err != nil:
		return fail(fileFailure(protocol.CmdInitFile, err))
	}
	return lines, sum, nil
}

func (s *Server) save(req *request) reply {
	name := req.list
	if err := datafile.ValidateName(name); err != nil {
		return nameFailure(protocol.CmdSave, err)
	}
	lines, err := s.store.Lines(req.ctx, name)
	if errors.Is(err, store.ErrNotLoaded) {
		return ko(protocol.CmdSave, http.StatusNotFound, protocol.ReasonNotLoaded, "LinkedList not found !")
	}
	if err != nil {
		return storeFailure(protocol.CmdSave, name, err)
	}
	timestamp := s.cfg.AddTimestamp
	if raw, present := req.params["ADD_TIMESTAMP"]; present {
		timestamp = form.JavaBoolean(raw)
	}
	target := name
	if timestamp {
		target = datafile.TimestampedName(s.now(), name)
	}
	if rep := s.reserved(protocol.CmdSave, target); rep != nil {
		return *rep
	}
	if rep := s.checkFreeSpace(lines); rep != nil {
		return *rep
	}
	if err := datafile.Save(s.cfg.DatasetDir, target, lines, s.charset.write); err != nil {
		return fileFailure(protocol.CmdSave, err)
	}
	return okLength(protocol.CmdSave, len(lines))
}

// reserved refuses the file name of the state directory (Config.ReservedName), which INITFILE
// may not read nor SAVE write.
func (s *Server) reserved(command, file string) *reply {
	if file == "" || file != s.cfg.ReservedName {
		return nil
	}
	rep := ko(command, http.StatusBadRequest, protocol.ReasonIllegalName, "Name reserved for the server's state !")
	return &rep
}

// checkFreeSpace refuses (HTTP 507) a SAVE of lines that would leave less than MinFreeBytes free
// in the dataset directory's file system: the journal, often on the same volume, must still be
// able to write. A file system whose free space cannot be read is not checked.
func (s *Server) checkFreeSpace(lines []string) *reply {
	reserve := s.cfg.MinFreeBytes
	if reserve <= 0 {
		return nil
	}
	free, err := datafile.FreeBytes(s.cfg.DatasetDir)
	if err != nil {
		return nil
	}
	if need := datafile.EncodedSize(lines, s.charset.write); free-need < reserve {
		rep := ko(protocol.CmdSave, http.StatusInsufficientStorage, protocol.ReasonLimit, fmt.Sprintf(
			"Not enough free space: SAVE needs %d bytes and must leave %d free (--min-free-bytes), %d are free !", need, reserve, free))
		return &rep
	}
	return nil
}

// load is the bulk-load extension: POST /sts/LOAD?FILENAME=<list>&MODE=REPLACE|FIRST|LAST with a
// whole file as the body, decoded with the read charset and split like INITFILE splits a file.
// SHA256=<hex>, when given, must be the body's digest; a REPLACE with it is a dataset's content
// (the operator's reload), and STATUS reports it for the list, as for a startup load. A REPLACE
// without it drops the list's digest, as INITFILE does: a client's own content is no dataset's.
// FIRST puts the file's lines before the list's, in file order; LAST after them. The lines go in
// as one change, all or nothing, within the limits. Like ADD, it accepts any list name, since no
// file is named.
//
// With Content-Type: application/json the body is instead a JSON array of strings, one per line,
// taken exactly as they are (jsonLines): the form EXPORT answers in JSON, through which any line,
// CR and LF included, goes and comes back unchanged. SHA256 is then the digest of the JSON body.
func (s *Server) load(req *request) reply {
	mode, ok := enumParam(req.params, "MODE", "REPLACE", loadModes)
	if !ok {
		return koInvalid(protocol.CmdLoad, "MODE value has to be REPLACE, FIRST or LAST !")
	}
	// sum stays "" without SHA256: a client's content, whose digest nobody asks for.
	sum, checked := req.params["SHA256"]
	if checked {
		digest := sha256.Sum256(req.body)
		actual := hex.EncodeToString(digest[:])
		if !strings.EqualFold(sum, actual) {
			return koInvalid(protocol.CmdLoad, "SHA256 does not match the body !")
		}
		sum = actual // as STATUS will report it
	}
	var lines []string
	if isJSONBody(req.contentType) {
		var fail *reply
		if lines, fail = jsonLines(req.contentType, req.body); fail != nil {
			return *fail
		}
	} else {
		lines = datafile.SplitLines(s.charset.read.Decode(string(req.body)))
	}
	n := len(lines)
	var err error
	switch mode {
	case "REPLACE":
		err = s.store.Replace(req.ctx, req.list, lines, sum)
	case "FIRST":
		err = s.store.Insert(req.ctx, req.list, lines, store.First)
	case "LAST":
		err = s.store.Insert(req.ctx, req.list, lines, store.Last)
	}
	if err != nil {
		return storeFailure(protocol.CmdLoad, req.list, err)
	}
	return okLength(protocol.CmdLoad, n)
}

// export is the extension GET /sts/EXPORT?FILENAME=<list>: the list as text, one line and "\n"
// each, in the write charset, without consuming anything. A line holding CR or LF is written as
// it is, so that a plain LOAD of the text splits it: in the JSON form (FORMAT=JSON or Accept) the
// answer is exact instead, the lines as a JSON array of strings ("lines", writeJSONExport), which
// a LOAD with Content-Type: application/json takes back unchanged.
func (s *Server) export(req *request) reply {
	lines, err := s.store.Lines(req.ctx, req.list)
	if err != nil {
		return storeFailure(protocol.CmdExport, req.list, err)
	}
	if req.json {
		return reply{command: protocol.CmdExport, values: lines} // written by writeJSON
	}
	return reply{command: protocol.CmdExport, layout: layoutExport, values: lines}
}
