package sts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The list commands. Each checks its parameters in the original's order, with the original's
// messages; enumerated values are upper case only, and a present but empty value is invalid.

// enumParam returns the value of an enumerated parameter: def when it is absent, ok=false when
// it is present but not one of values.
func enumParam[T any](params map[string]string, name string, def T, values map[string]T) (T, bool) {
	raw, present := params[name]
	if !present {
		return def, true
	}
	v, ok := values[raw]
	return v, ok
}

var (
	readModes   = map[string]store.Position{"FIRST": store.First, "LAST": store.Last, "RANDOM": store.Random}
	addModes    = map[string]store.Position{"FIRST": store.First, "LAST": store.Last}
	trueOrFalse = map[string]bool{"TRUE": true, "FALSE": false}
)

// listToRead checks the first steps shared by READ, READMULTI and FIND: FILENAME present, the
// list loaded and not empty. The emptiness check comes before any other parameter is validated.
//
// With the WAIT parameter (our extension) it parses WAIT instead of looking at the list: the
// command checks all its parameters first, then the store waits for lines that are not there.
func (s *Server) listToRead(command string, params map[string]string) (string, time.Duration, *reply) {
	name, present := params["FILENAME"]
	if !present {
		rep := koMissing(command, "FILENAME")
		return "", 0, &rep
	}
	if raw, waits := params["WAIT"]; waits {
		wait, ok := s.parseWait(raw)
		if !ok {
			rep := koInvalid(command, fmt.Sprintf("WAIT value has to be a number of milliseconds from 0 to %d !", maxWaitMillis))
			return "", 0, &rep
		}
		return name, wait, nil
	}
	n, err := s.store.Length(name)
	if err == nil && n == 0 {
		err = store.ErrEmpty
	}
	if err != nil {
		rep := storeFailure(command, name, err)
		return "", 0, &rep
	}
	return name, 0, nil
}

// maxWaitMillis is the largest WAIT accepted: Java's largest int, as for NB_LINES.
const maxWaitMillis = 1<<31 - 1

// parseWait reads WAIT, decimal milliseconds, and caps it at Config.MaxWait (a longer wait is
// shortened, not refused, so that a plan keeps working on a server with a lower cap).
func (s *Server) parseWait(raw string) (time.Duration, bool) {
	if raw == "" || strings.TrimLeft(raw, "0123456789") != "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || ms > maxWaitMillis {
		return 0, false
	}
	return min(time.Duration(ms)*time.Millisecond, s.cfg.MaxWait), true
}

// readOptions parses READ_MODE and KEEP, shared by READ and READMULTI.
func readOptions(command string, params map[string]string) (store.Position, bool, *reply) {
	pos, ok := enumParam(params, "READ_MODE", store.First, readModes)
	if !ok {
		rep := koInvalid(command, "READ_MODE value has to be FIRST, LAST or RANDOM !")
		return 0, false, &rep
	}
	keep, ok := enumParam(params, "KEEP", true, trueOrFalse)
	if !ok {
		rep := koInvalid(command, "KEEP value has to be TRUE or FALSE !")
		return 0, false, &rep
	}
	return pos, keep, nil
}

func (s *Server) read(req *request) reply {
	name, wait, fail := s.listToRead(cmdRead, req.params)
	if fail != nil {
		return *fail
	}
	pos, keep, fail := readOptions(cmdRead, req.params)
	if fail != nil {
		return *fail
	}
	lines, err := s.store.Read(req.ctx, name, pos, 1, keep, wait)
	if err != nil {
		return storeFailure(cmdRead, name, err)
	}
	return okValue(cmdRead, lines[0])
}

func (s *Server) readMulti(req *request) reply {
	name, wait, fail := s.listToRead(cmdReadMulti, req.params)
	if fail != nil {
		return *fail
	}
	pos, keep, fail := readOptions(cmdReadMulti, req.params)
	if fail != nil {
		return *fail
	}
	raw, present := req.params["NB_LINES"]
	n, parsed := parseJavaInt(raw, 10)
	if !present {
		raw = "null" // Java prints the missing String as "null"
	}
	if !parsed {
		return koInvalid(cmdReadMulti, "Can't parse integer parameter NB_LINES : "+raw+" !")
	}
	if n < 1 {
		return koInvalid(cmdReadMulti, "Parameter NB_LINES must be greater or equals than 1 : "+raw+" !")
	}
	lines, err := s.store.Read(req.ctx, name, pos, int(n), keep, wait)
	if err != nil {
		return storeFailure(cmdReadMulti, name, err)
	}
	return reply{command: cmdReadMulti, layout: layoutMulti, values: lines}
}

var findModes = map[string]string{"SUBSTRING": "SUBSTRING", "EQUALS": "EQUALS", "REGEX_FIND": "REGEX_FIND", "REGEX_MATCH": "REGEX_MATCH"}

func (s *Server) find(req *request) reply {
	name, wait, fail := s.listToRead(cmdFind, req.params)
	if fail != nil {
		return *fail
	}
	line := req.params["LINE"]
	if line == "" {
		return ko(cmdFind, http.StatusBadRequest, reasonMissingParameter, "Cant't find empty line !")
	}
	mode, ok := enumParam(req.params, "FIND_MODE", "SUBSTRING", findModes)
	if !ok {
		return koInvalid(cmdFind, "FIND_MODE value has to be EQUALS, SUBSTRING, REGEX_FIND or REGEX_MATCH !")
	}
	keep, ok := enumParam(req.params, "KEEP", true, trueOrFalse)
	if !ok {
		return koInvalid(cmdFind, "KEEP has to be TRUE or FALSE !")
	}
	match, err := s.matcher(mode, line)
	switch {
	case errors.Is(err, javaregex.ErrTooLong):
		return ko(cmdFind, http.StatusBadRequest, reasonRegexTooLong, fmt.Sprintf("Regex longer than %d bytes !", javaregex.MaxPatternBytes))
	case errors.Is(err, javaregex.ErrTooCostly):
		return ko(cmdFind, http.StatusBadRequest, reasonRegexTooCostly, "Regex too costly to compile !")
	case err != nil:
		return ko(cmdFind, http.StatusBadRequest, reasonRegex, "Regex compile error !")
	}
	found, err := s.store.Find(req.ctx, name, match, keep, wait)
	if err != nil {
		return storeFailure(cmdFind, name, err)
	}
	return okValue(cmdFind, found)
}

// matcher returns FIND's test of a line. The regular expression is compiled for this FIND alone,
// so that all its matches share the regex timeout: however many lines the scan tests (and a
// waiting FIND tests again), it spends about the timeout at most, and so holds the list's lock
// no longer. The first timeout ends the scan.
func (s *Server) matcher(mode, line string) (func(string) (bool, error), error) {
	switch mode {
	case "EQUALS":
		return func(l string) (bool, error) { return l == line, nil }, nil
	case "SUBSTRING":
		return func(l string) (bool, error) { return strings.Contains(l, line), nil }, nil
	}
	re, err := javaregex.Compile(line, s.cfg.RegexTimeout)
	if err != nil {
		return nil, err
	}
	if mode == "REGEX_MATCH" {
		return re.Match, nil
	}
	return re.Find, nil
}

func (s *Server) add(req *request) reply {
	name, present := req.params["FILENAME"]
	if !present {
		return koMissing(cmdAdd, "FILENAME")
	}
	line, present := req.params["LINE"]
	if !present {
		return koMissing(cmdAdd, "LINE")
	}
	pos, ok := enumParam(req.params, "ADD_MODE", store.First, addModes)
	if !ok {
		// The original creates the list before it validates the mode.
		return s.ensureThen(name, koInvalid(cmdAdd, "ADD_MODE value has to be FIRST or LAST !"))
	}
	unique, ok := enumParam(req.params, "UNIQUE", false, trueOrFalse)
	if !ok {
		return s.ensureThen(name, koInvalid(cmdAdd, "UNIQUE value has to be TRUE or FALSE !"))
	}
	if err := s.store.Add(name, line, pos, unique); err != nil {
		return storeFailure(cmdAdd, name, err)
	}
	return okReply(cmdAdd)
}

// ensureThen creates the list of a failed ADD, as the original does, and answers rep unless the
// creation itself failed.
func (s *Server) ensureThen(name string, rep reply) reply {
	if err := s.store.Ensure(name); err != nil {
		return storeFailure(cmdAdd, name, err)
	}
	return rep
}

func (s *Server) length(req *request) reply {
	name, present := req.params["FILENAME"]
	if !present {
		return koMissing(cmdLength, "FILENAME")
	}
	n, err := s.store.Length(name)
	if err != nil {
		return storeFailure(cmdLength, name, err)
	}
	return okLength(cmdLength, n)
}

func (s *Server) status(*request) reply {
	return reply{command: cmdStatus, layout: layoutStatus, lists: s.store.Lengths(), loaded: s.loadedSums(), failed: s.startupFailures()}
}

func (s *Server) reset(req *request) reply {
	name, present := req.params["FILENAME"]
	if !present {
		return koMissing(cmdReset, "FILENAME")
	}
	if _, err := s.store.Reset(name); err != nil {
		return storeFailure(cmdReset, name, err)
	}
	return okReply(cmdReset)
}

// storeFailure turns a store error into the original's KO, or for our extensions into a KO of
// their own.
func storeFailure(command, name string, err error) reply {
	var short *store.ShortListError
	var limit *store.LimitError
	switch {
	case errors.Is(err, store.ErrNotLoaded):
		return koNotLoaded(command, name)
	case errors.Is(err, store.ErrEmpty):
		return koEmpty(command)
	case errors.As(err, &short):
		return ko(command, http.StatusNotFound, reasonShortList,
			fmt.Sprintf("Number lines to read greater than file size, %d greater than %d !", short.Want, short.Have))
	case errors.Is(err, store.ErrNoMatch):
		return ko(command, http.StatusNotFound, reasonNoMatch, "Not find !")
	case errors.Is(err, store.ErrDuplicate):
		return ko(command, http.StatusConflict, reasonDuplicate, "ENTRY already exists !")
	case errors.Is(err, javaregex.ErrTimeout):
		return ko(command, http.StatusBadRequest, reasonRegexTimeout, "Regex evaluation timed out !")
	case errors.Is(err, javaregex.ErrTooComplex):
		return ko(command, http.StatusBadRequest, reasonRegexTooComplex, "Regex needs too much backtracking !")
	case errors.As(err, &limit):
		return koLimit(command, limit.Limit, limit.Max)
	case errors.Is(err, store.ErrNotRecorded):
		// The journal's error names the state directory: it is logged by the journal, not shown.
		return ko(command, http.StatusServiceUnavailable, reasonNotRecorded, "The change could not be recorded, it may be lost !")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ko(command, http.StatusServiceUnavailable, reasonUnavailable, "Request cancelled !")
	}
	return ko(command, http.StatusInternalServerError, reasonIO, err.Error())
}
