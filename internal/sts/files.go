package sts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"net/http"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The commands that move lists between files and the store. File I/O runs outside any list
// lock: INITFILE reads the whole file before it replaces the list, SAVE writes a copy.

func (s *Server) initFile(req *request) reply {
	name, present := req.params["FILENAME"]
	if !present {
		return koMissing(cmdInitFile, "FILENAME")
	}
	return s.initFileNamed(name)
}

// initFileNamed loads the dataset file name into the list of the same name: INITFILE, and the
// startup loading of initFileAtStartup.
func (s *Server) initFileNamed(name string) reply {
	if err := datafile.ValidateName(name); err != nil {
		return nameFailure(cmdInitFile, err)
	}
	lines, err := datafile.ReadLines(s.cfg.DatasetDir, name, s.charset.read, s.cfg.Limits.MaxTotalBytes)
	var tooLarge *datafile.TooLargeError
	switch {
	case errors.Is(err, datafile.ErrFileNotFound):
		return ko(cmdInitFile, http.StatusNotFound, reasonFileNotFound, "file not found !")
	case errors.As(err, &tooLarge):
		return koLimit(cmdInitFile, store.LimitTotalBytes, tooLarge.Max)
	case err != nil:
		return fileFailure(cmdInitFile, err)
	}
	n := len(lines)
	if err := s.replace(name, lines, ""); err != nil {
		return storeFailure(cmdInitFile, name, err)
	}
	return okLength(cmdInitFile, n)
}

// replace replaces list with lines read from content whose SHA-256 (hex) is sum, "" when the
// content is no dataset source (INITFILE reads the dataset directory), and keeps sum for STATUS.
// The lock keeps the sums in the order of the replacements.
func (s *Server) replace(list string, lines []string, sum string) error {
	s.loadedMu.Lock()
	defer s.loadedMu.Unlock()
	if err := s.store.Replace(list, lines); err != nil {
		return err
	}
	if sum == "" {
		delete(s.loadedFrom, list)
	} else {
		s.loadedFrom[list] = sum
	}
	return nil
}

// loadedSums is a copy of loadedFrom.
func (s *Server) loadedSums() map[string]string {
	s.loadedMu.Lock()
	defer s.loadedMu.Unlock()
	return maps.Clone(s.loadedFrom)
}

// nameFailure is the original's KO for a file name that INITFILE and SAVE refuse.
func nameFailure(command string, err error) reply {
	if errors.Is(err, datafile.ErrNameTooLong) {
		return ko(command, http.StatusBadRequest, reasonNameTooLong, "Maximum size reached (128) !")
	}
	return ko(command, http.StatusBadRequest, reasonIllegalName, "Illegal character found !")
}

// fileFailure is the KO of a dataset file that INITFILE or SAVE could not use. In the JSON form, a
// name that leads to something that cannot be a data file is the client's mistake (400); anything
// else is the server's file system failing (500).
func fileFailure(command string, err error) reply {
	var fileErr *datafile.FileError
	if errors.Is(err, datafile.ErrInvalidPath) || errors.As(err, &fileErr) && fileErr.BadName {
		return ko(command, http.StatusBadRequest, reasonFileError, err.Error())
	}
	return ko(command, http.StatusInternalServerError, reasonIO, err.Error())
}

func (s *Server) save(req *request) reply {
	name, present := req.params["FILENAME"]
	if !present {
		return koMissing(cmdSave, "FILENAME")
	}
	if err := datafile.ValidateName(name); err != nil {
		return nameFailure(cmdSave, err)
	}
	lines, err := s.store.Lines(name)
	if err != nil {
		return ko(cmdSave, http.StatusNotFound, reasonNotLoaded, "LinkedList not found !")
	}
	timestamp := s.cfg.AddTimestamp
	if raw, present := req.params["ADD_TIMESTAMP"]; present {
		timestamp = javaBoolean(raw)
	}
	target := name
	if timestamp {
		target = datafile.TimestampedName(s.now(), name)
	}
	if err := datafile.Save(s.cfg.DatasetDir, target, lines, s.charset.write); err != nil {
		return fileFailure(cmdSave, err)
	}
	return okLength(cmdSave, len(lines))
}

// loadModes are the ways LOAD puts a file into a list.
var loadModes = map[string]string{"REPLACE": "REPLACE", "FIRST": "FIRST", "LAST": "LAST"}

// load is the bulk-load extension: POST /sts/LOAD?FILENAME=<list>&MODE=REPLACE|FIRST|LAST with a
// whole file as the body, decoded with the read charset and split like INITFILE splits a file.
// SHA256=<hex>, when given, must be the body's digest; a REPLACE with it is a dataset's content
// (the operator's reload), and STATUS reports it for the list, as for a startup load. A REPLACE
// without it drops the list's digest, as INITFILE does: a client's own content is no dataset's.
// FIRST puts the file's lines before the list's, in file order; LAST after them. The lines go in
// as one change, all or nothing, within the limits. Like ADD, it accepts any list name, since no
// file is named.
func (s *Server) load(req *request) reply {
	name, present := req.params["FILENAME"]
	if !present {
		return koMissing(cmdLoad, "FILENAME")
	}
	mode, ok := enumParam(req.params, "MODE", "REPLACE", loadModes)
	if !ok {
		return koInvalid(cmdLoad, "MODE value has to be REPLACE, FIRST or LAST !")
	}
	// sum stays "" without SHA256: a client's content, whose digest nobody asks for.
	sum, checked := req.params["SHA256"]
	if checked {
		digest := sha256.Sum256(req.body)
		actual := hex.EncodeToString(digest[:])
		if !strings.EqualFold(sum, actual) {
			return koInvalid(cmdLoad, "SHA256 does not match the body !")
		}
		sum = actual // as STATUS will report it
	}
	lines := datafile.SplitLines(s.charset.read.Decode(string(req.body)))
	n := len(lines)
	var err error
	switch mode {
	case "REPLACE":
		err = s.replace(name, lines, sum)
	case "FIRST":
		err = s.store.Insert(name, lines, store.First)
	case "LAST":
		err = s.store.Insert(name, lines, store.Last)
	}
	if err != nil {
		return storeFailure(cmdLoad, name, err)
	}
	return okLength(cmdLoad, n)
}

// export is the extension GET /sts/EXPORT?FILENAME=<list>: the list as text, one line and "\n"
// each, in the write charset, without consuming anything.
func (s *Server) export(req *request) reply {
	name, present := req.params["FILENAME"]
	if !present {
		return koMissing(cmdExport, "FILENAME")
	}
	lines, err := s.store.Lines(name)
	if err != nil {
		return koNotLoaded(cmdExport, name)
	}
	return reply{command: cmdExport, layout: layoutExport, values: lines}
}
