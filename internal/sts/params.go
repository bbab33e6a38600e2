package sts

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The parameters of the commands, read from request.params: a list's name (FILENAME), the
// enumerated values, the numbers, WAIT and the identifiers (REQUEST_ID, LEASE). Each command
// checks its parameters in the original's order, with the original's messages, through these;
// enumerated values are upper case only, and a present but empty value is invalid. A refused
// parameter is a reply, built here.

// checkListName refuses a FILENAME that no list may be called, before any command runs with it:
// one longer than Config.MaxNameBytes (413 in the JSON form, like a line too long), or one that
// holds a control character (400), which could forge rows in STATUS or lines in a log. INITFILE
// and SAVE apply the original's file-name rules first, with its messages.
func (s *Server) checkListName(command, name string) *reply {
	fileName := command == protocol.CmdInitFile || command == protocol.CmdSave
	if fileName {
		if err := datafile.ValidateName(name); err != nil {
			rep := nameFailure(command, err)
			return &rep
		}
	}
	if max := s.cfg.MaxNameBytes; max > 0 && int64(len(name)) > max {
		rep := koLimit(command, limitNameBytes, max)
		return &rep
	}
	if !hasControl(name) {
		return nil
	}
	rep := koInvalid(command, "FILENAME must not hold control characters !")
	if fileName {
		rep = ko(command, http.StatusBadRequest, protocol.ReasonIllegalName, datafile.ErrIllegalName.Error())
	}
	return &rep
}

// hasControl reports whether s holds a C0 control character (U+0000 to U+001F, CR, LF and tab
// included) or DEL. Bytes suffice: UTF-8 encodes no other character with a byte below 0x80.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

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

// The values of the enumerated parameters.
var (
	readModes   = map[string]store.Position{"FIRST": store.First, "LAST": store.Last, "RANDOM": store.Random}
	addModes    = map[string]store.Position{"FIRST": store.First, "LAST": store.Last}
	trueOrFalse = map[string]bool{"TRUE": true, "FALSE": false}
)

// findModes are FIND's ways of testing a line.
var findModes = map[string]string{"SUBSTRING": "SUBSTRING", "EQUALS": "EQUALS", "REGEX_FIND": "REGEX_FIND", "REGEX_MATCH": "REGEX_MATCH"}

// loadModes are the ways LOAD puts a file into a list.
var loadModes = map[string]string{"REPLACE": "REPLACE", "FIRST": "FIRST", "LAST": "LAST"}

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

// maxWaitMillis is the largest WAIT accepted: Java's largest int, as for NB_LINES.
const maxWaitMillis = 1<<31 - 1

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

// parseWait reads WAIT, decimal milliseconds, and caps it at Config.MaxWait (a longer wait is
// shortened, not refused, so that a plan keeps working on a server with a lower cap).
func (s *Server) parseWait(raw string) (time.Duration, bool) {
	ms, ok := parseDecimal(raw, maxWaitMillis)
	return min(time.Duration(ms)*time.Millisecond, s.cfg.MaxWait), ok
}

// maxIdentifierBytes bounds REQUEST_ID and LEASE, which a store keeps or looks up as keys.
const maxIdentifierBytes = 128

// checkIdentifier refuses an empty REQUEST_ID or LEASE, one over maxIdentifierBytes, and one
// holding a control character, which would forge a log line.
func checkIdentifier(command, param, value string) *reply {
	if value == "" || len(value) > maxIdentifierBytes || hasControl(value) {
		rep := koInvalid(command, param+" value has to be 1 to 128 bytes without control characters !")
		return &rep
	}
	return nil
}
