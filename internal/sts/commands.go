package sts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/form"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
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

// readWait parses WAIT (our extension) for READ, READMULTI and FIND; absent, it is 0.
func (s *Server) readWait(command string, params map[string]string) (time.Duration, *reply) {
	raw, waits := params["WAIT"]
	if !waits {
		return 0, nil
	}
	wait, ok := s.parseWait(raw)
	if !ok {
		rep := koInvalid(command, fmt.Sprintf("WAIT value has to be a number of milliseconds from 0 to %d !", maxWaitMillis))
		return 0, &rep
	}
	return wait, nil
}

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

// maxWaitMillis is the largest WAIT accepted: Java's largest int, as for NB_LINES.
const maxWaitMillis = 1<<31 - 1

// parseWait reads WAIT, decimal milliseconds, and caps it at Config.MaxWait (a longer wait is
// shortened, not refused, so that a plan keeps working on a server with a lower cap).
func (s *Server) parseWait(raw string) (time.Duration, bool) {
	ms, ok := parseDecimal(raw, maxWaitMillis)
	return min(time.Duration(ms)*time.Millisecond, s.cfg.MaxWait), ok
}

// parseDecimal reads a parameter of decimal digits only (no sign, no space) whose value is at
// most max.
func parseDecimal(raw string, max int64) (int64, bool) {
	if raw == "" || strings.TrimLeft(raw, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n > max {
		return 0, false
	}
	return n, true
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

var findModes = map[string]string{"SUBSTRING": "SUBSTRING", "EQUALS": "EQUALS", "REGEX_FIND": "REGEX_FIND", "REGEX_MATCH": "REGEX_MATCH"}

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

func (s *Server) add(req *request) reply {
	line, present := req.params["LINE"]
	if !present {
		return koMissing(protocol.CmdAdd, "LINE")
	}
	pos, ok := enumParam(req.params, "ADD_MODE", store.First, addModes)
	if !ok {
		// The original creates the list before it validates the mode.
		return s.ensureThen(req, koInvalid(protocol.CmdAdd, "ADD_MODE value has to be FIRST or LAST !"))
	}
	unique, ok := enumParam(req.params, "UNIQUE", false, trueOrFalse)
	if !ok {
		return s.ensureThen(req, koInvalid(protocol.CmdAdd, "UNIQUE value has to be TRUE or FALSE !"))
	}
	if err := s.store.Add(req.ctx, req.list, line, pos, unique); err != nil {
		return storeFailure(protocol.CmdAdd, req.list, err)
	}
	return okReply(protocol.CmdAdd)
}

// ensureThen creates the list of a failed ADD, as the original does, and answers rep unless the
// creation itself failed.
func (s *Server) ensureThen(req *request, rep reply) reply {
	if err := s.store.Ensure(req.ctx, req.list); err != nil {
		return storeFailure(protocol.CmdAdd, req.list, err)
	}
	return rep
}

func (s *Server) length(req *request) reply {
	n, err := s.store.Length(req.ctx, req.list)
	if err != nil {
		return storeFailure(protocol.CmdLength, req.list, err)
	}
	return okLength(protocol.CmdLength, n)
}

func (s *Server) status(req *request) reply {
	lists, err := s.store.Lists(req.ctx)
	if err != nil {
		return storeFailure(protocol.CmdStatus, "", err)
	}
	return reply{command: protocol.CmdStatus, layout: layoutStatus, lists: lists, failed: s.startupFailures()}
}

func (s *Server) reset(req *request) reply {
	if _, err := s.store.Reset(req.ctx, req.list); err != nil {
		return storeFailure(protocol.CmdReset, req.list, err)
	}
	return okReply(protocol.CmdReset)
}

// storeFailure turns a store error into the original's KO, or for our extensions into a KO of
// their own.
func storeFailure(command, name string, err error) reply {
	var short *store.ShortListError
	var limit *store.LimitError
	var ended *store.LeaseEndedError
	switch {
	case errors.Is(err, store.ErrNotLoaded):
		return koNotLoaded(command, name)
	case errors.Is(err, store.ErrEmpty):
		return koEmpty(command)
	case errors.As(err, &short):
		return ko(command, http.StatusNotFound, protocol.ReasonShortList,
			fmt.Sprintf("Number lines to read greater than file size, %d greater than %d !", short.Want, short.Have))
	case errors.Is(err, store.ErrNoMatch):
		return ko(command, http.StatusNotFound, protocol.ReasonNoMatch, "Not find !")
	case errors.Is(err, store.ErrDuplicate):
		return ko(command, http.StatusConflict, protocol.ReasonDuplicate, "ENTRY already exists !")
	case errors.Is(err, store.ErrLeaseNotFound):
		return ko(command, http.StatusNotFound, protocol.ReasonLeaseNotFound, "No such lease: unknown, acknowledged, or ended too long ago !")
	case errors.As(err, &ended):
		return ko(command, http.StatusConflict, protocol.ReasonLeaseEnded, "Lease "+ended.How+", its lines went back !")
	case errors.Is(err, javaregex.ErrTimeout):
		return ko(command, http.StatusBadRequest, protocol.ReasonRegexTimeout, "Regex evaluation timed out !")
	case errors.Is(err, javaregex.ErrTooComplex):
		return ko(command, http.StatusBadRequest, protocol.ReasonRegexTooComplex, "Regex needs too much backtracking !")
	case errors.As(err, &limit):
		return koLimit(command, limit.Limit, limit.Max)
	case errors.Is(err, store.ErrFull):
		return ko(command, http.StatusInsufficientStorage, protocol.ReasonLimit, "Storage backend full !")
	case errors.Is(err, store.ErrRequestReused):
		return ko(command, http.StatusUnprocessableEntity, protocol.ReasonRequestIDReused, "REQUEST_ID was sent before with another request !")
	case errors.Is(err, store.ErrOutcomeUnknown):
		// The backend's error is logged by the store. Only a retry with the same REQUEST_ID can
		// learn whether the change was made.
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonOutcomeUnknown, "Storage backend did not answer: the change may have been made; send commands with a REQUEST_ID to retry them safely !")
	case errors.Is(err, store.ErrUnavailable):
		// The backend's error (an address, a Redis message) is logged by the store, not shown.
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonBackendUnavailable, "Storage backend unavailable, retry later !")
	case errors.Is(err, store.ErrNotRecorded):
		// The journal's error names the state directory: it is logged by the journal, not shown.
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonNotRecorded, "The change could not be recorded, it may be lost !")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonUnavailable, "Request cancelled !")
	}
	return ko(command, http.StatusInternalServerError, protocol.ReasonIO, err.Error())
}
