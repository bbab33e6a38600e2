package sts

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/form"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The reading commands: READ, READMULTI and FIND, each consuming (KEEP=FALSE), moving the line(s)
// to the end (KEEP=TRUE) or taking them under a lease (LEASE, cmd_lease.go), at once or after
// waiting for lines (WAIT).

// readFailure is the answer of a READ, READMULTI or FIND whose parameters are invalid: the
// original checks that the list is loaded and not empty before it validates them, so those
// answers come first. A valid read asks the store once, which answers the same errors; only this
// path asks for the length. With WAIT, the parameters are checked before the list is looked at.
func (s *Server) readFailure(req *request, command string, invalid reply) reply {
	if _, waits := req.params["WAIT"]; waits {
		return invalid
	}
	n, err := s.store.Length(req.ctx, req.list)
	if err == nil && n == 0 {
		err = store.ErrEmpty
	}
	if err != nil {
		return storeFailure(command, req.list, err)
	}
	return invalid
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

// read answers READ: one line of the list, by READ_MODE.
func (s *Server) read(req *request) reply {
	wait, fail := s.readWait(protocol.CmdRead, req.params)
	if fail != nil {
		return *fail
	}
	pos, keep, fail := readOptions(protocol.CmdRead, req.params)
	if fail != nil {
		return s.readFailure(req, protocol.CmdRead, *fail)
	}
	spec, leased, fail := s.leaseOptions(protocol.CmdRead, req)
	if fail != nil {
		return s.readFailure(req, protocol.CmdRead, *fail)
	}
	if leased {
		return s.readLeased(req, protocol.CmdRead, pos, 1, spec, wait)
	}
	lines, err := s.store.Read(req.ctx, req.list, pos, 1, keep, wait)
	if err != nil {
		return storeFailure(protocol.CmdRead, req.list, err)
	}
	return okValue(protocol.CmdRead, lines[0])
}

// readMulti answers READMULTI: NB_LINES lines of the list, picked one after the other.
func (s *Server) readMulti(req *request) reply {
	wait, fail := s.readWait(protocol.CmdReadMulti, req.params)
	if fail != nil {
		return *fail
	}
	pos, keep, fail := readOptions(protocol.CmdReadMulti, req.params)
	if fail != nil {
		return s.readFailure(req, protocol.CmdReadMulti, *fail)
	}
	raw, present := req.params["NB_LINES"]
	n, parsed := form.ParseJavaInt(raw, 10)
	if !present {
		raw = "null" // Java prints the missing String as "null"
	}
	if !parsed {
		return s.readFailure(req, protocol.CmdReadMulti, koInvalid(protocol.CmdReadMulti, "Can't parse integer parameter NB_LINES : "+raw+" !"))
	}
	if n < 1 {
		return s.readFailure(req, protocol.CmdReadMulti, koInvalid(protocol.CmdReadMulti, "Parameter NB_LINES must be greater or equals than 1 : "+raw+" !"))
	}
	spec, leased, fail := s.leaseOptions(protocol.CmdReadMulti, req)
	if fail != nil {
		return s.readFailure(req, protocol.CmdReadMulti, *fail)
	}
	if leased {
		return s.readLeased(req, protocol.CmdReadMulti, pos, int(n), spec, wait)
	}
	lines, err := s.store.Read(req.ctx, req.list, pos, int(n), keep, wait)
	if err != nil {
		return storeFailure(protocol.CmdReadMulti, req.list, err)
	}
	return reply{command: protocol.CmdReadMulti, layout: layoutMulti, values: lines}
}

// find answers FIND: the first line LINE matches, by FIND_MODE.
func (s *Server) find(req *request) reply {
	wait, fail := s.readWait(protocol.CmdFind, req.params)
	if fail != nil {
		return *fail
	}
	match, keep, invalid := s.findOptions(req.params)
	if invalid != nil {
		return s.readFailure(req, protocol.CmdFind, *invalid)
	}
	spec, leased, fail := s.leaseOptions(protocol.CmdFind, req)
	if fail != nil {
		return s.readFailure(req, protocol.CmdFind, *fail)
	}
	if leased {
		lease, err := s.store.FindLeased(req.ctx, req.list, match, spec, wait)
		if err != nil {
			return storeFailure(protocol.CmdFind, req.list, err)
		}
		return okLeased(protocol.CmdFind, lease)
	}
	found, err := s.store.Find(req.ctx, req.list, match, keep, wait)
	if err != nil {
		return storeFailure(protocol.CmdFind, req.list, err)
	}
	return okValue(protocol.CmdFind, found)
}

// findOptions checks FIND's LINE, FIND_MODE and KEEP in the original's order and compiles its
// test of a line.
func (s *Server) findOptions(params map[string]string) (store.Matcher, bool, *reply) {
	fail := func(rep reply) (store.Matcher, bool, *reply) { return nil, false, &rep }
	line := params["LINE"]
	if line == "" {
		return fail(ko(protocol.CmdFind, http.StatusBadRequest, protocol.ReasonMissingParameter, "Cant't find empty line !"))
	}
	mode, ok := enumParam(params, "FIND_MODE", "SUBSTRING", findModes)
	if !ok {
		return fail(koInvalid(protocol.CmdFind, "FIND_MODE value has to be EQUALS, SUBSTRING, REGEX_FIND or REGEX_MATCH !"))
	}
	keep, ok := enumParam(params, "KEEP", true, trueOrFalse)
	if !ok {
		return fail(koInvalid(protocol.CmdFind, "KEEP has to be TRUE or FALSE !"))
	}
	match, err := s.matcher(mode, line)
	switch {
	case errors.Is(err, javaregex.ErrTooLong):
		return fail(ko(protocol.CmdFind, http.StatusBadRequest, protocol.ReasonRegexTooLong, fmt.Sprintf("Regex longer than %d bytes !", javaregex.MaxPatternBytes)))
	case errors.Is(err, javaregex.ErrTooCostly):
		return fail(ko(protocol.CmdFind, http.StatusBadRequest, protocol.ReasonRegexTooCostly, "Regex too costly to compile !"))
	case err != nil:
		return fail(ko(protocol.CmdFind, http.StatusBadRequest, protocol.ReasonRegex, "Regex compile error !"))
	}
	return match, keep, nil
}

// matcher returns FIND's test of a line. The regular expression is compiled for this FIND alone,
// so that all its matches share the regex timeout: however many lines the scan tests (and a
// waiting FIND tests again), it spends about the timeout at most, and so holds the list's lock
// no longer. The first timeout ends the scan.
func (s *Server) matcher(mode, line string) (store.Matcher, error) {
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
