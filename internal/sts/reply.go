package sts

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// layout is how the HTML form lays out a successful answer.
type layout int

const (
	layoutText   layout = iota // OK(text)
	layoutMulti                // READMULTI: one "line<br />" per line
	layoutStatus               // STATUS: one "name = length<br />" per list
	layoutConfig               // CONFIG: one "key=value<br />" per setting
	layoutHelp                 // the help page, which is HTML of its own
	layoutExport               // EXPORT: the lines as plain text
	layoutReload               // RELOAD: STATUS's rows, of the lists reloaded (none: an empty body)
)

// reply is what a command produced, before it is rendered in the original's HTML or as JSON.
type reply struct {
	command string
	fail    *failure // nil when the command succeeded
	layout  layout
	value   *string          // READ, FIND
	values  []string         // READMULTI; EXPORT's lines
	length  *int             // LENGTH, INITFILE, LOAD, SAVE
	lists   []store.ListInfo // STATUS; RELOAD: the lists reloaded
	failed  []loadFailure    // STATUS: the startup loads that failed; RELOAD: the reloads that failed
	config  []setting        // CONFIG
	lease   string           // the id of a leased read's lease
	expires time.Time        // when that lease, or the one EXTEND prolonged, runs out
}

// setting is one line of the CONFIG answer.
type setting struct{ key, value string }

// text is the content of OK(...) for the single-value layout.
func (rep *reply) text() string {
	switch {
	case rep.value != nil:
		return *rep.value
	case rep.length != nil:
		return strconv.Itoa(*rep.length)
	}
	return ""
}

// failure is a KO answer: the original's message, and what the JSON form adds to it.
type failure struct {
	message string // the text after "Error : "
	reason  string // one word, for programs (JSON "reason")
	status  int    // the HTTP status of the JSON form; the HTML form answers 200 as the original
}

func okReply(command string) reply { return reply{command: command} }

func okValue(command, value string) reply { return reply{command: command, value: &value} }

func okLength(command string, n int) reply { return reply{command: command, length: &n} }

// okLeased is the answer of a read with LEASE: its line(s), laid out as the read without LEASE
// lays them out, and the lease.
func okLeased(command string, lease store.Lease) reply {
	rep := reply{command: command, lease: lease.ID, expires: leaseExpiry(lease.Expires)}
	if command == protocol.CmdReadMulti {
		rep.layout, rep.values = layoutMulti, lease.Lines
	} else {
		rep.value = &lease.Lines[0]
	}
	return rep
}

// leaseExpiry is a lease's expiry as answers show it, in UTC to the millisecond, so that the
// header and the JSON form print the same text.
func leaseExpiry(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func ko(command string, status int, reason, message string) reply {
	return reply{command: command, fail: &failure{message: message, reason: reason, status: status}}
}

func koMissing(command, param string) reply {
	return ko(command, http.StatusBadRequest, protocol.ReasonMissingParameter, param+" parameter was missing !")
}

func koInvalid(command, message string) reply {
	return ko(command, http.StatusBadRequest, protocol.ReasonInvalidParameter, message)
}

func koNotLoaded(command, list string) reply {
	return ko(command, http.StatusNotFound, protocol.ReasonNotLoaded, list+" not loaded yet !")
}

func koEmpty(command string) reply {
	return ko(command, http.StatusNotFound, protocol.ReasonEmpty, "No more line !")
}

// koLimit refuses a change that would go over the limit named like its flag. A request too big by
// itself is 413 in the JSON form; a list or store that is full, 507.
func koLimit(command, limit string, max int64) reply {
	status := http.StatusInsufficientStorage
	if limit == store.LimitLineBytes || limit == store.LimitRecordBytes || limit == limitNameBytes {
		status = http.StatusRequestEntityTooLarge
	}
	return ko(command, status, protocol.ReasonLimit, fmt.Sprintf("Limit exceeded: %s=%d !", limit, max))
}

func koUnknownCommand() reply {
	return ko("", http.StatusNotFound, protocol.ReasonUnknownCommand, "unknown command !")
}

// limitNameBytes names Config.MaxNameBytes in its KO, as the store's limits are named: the flag.
const limitNameBytes = "max-name-bytes"

// loadFailure is a startup load that failed: the list it was for ("" when a directory or the
// init files could not even be listed), where it came from, and why.
type loadFailure struct{ list, source, message string }
