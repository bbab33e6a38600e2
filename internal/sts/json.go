package sts

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// jsonAnswer is the JSON form of an answer, sent instead of the original's HTML when the client
// asks for it (Accept: application/json, or FORMAT=JSON). Fields that do not apply are omitted.
//
//	ok       always   whether the command succeeded
//	command  always   the command the request ran (READ, STATUS, ...); "" when it names none:
//	                  an unknown command (any other path, or a method the command does not
//	                  answer to), /metrics, or a request that could not be parsed
//	value             READ, FIND: the line
//	values            READMULTI: the lines, in pick order
//	length            LENGTH; INITFILE and LOAD: lines loaded; SAVE: lines written
//	lists, total      STATUS: every list with its length, sorted by name, and the sum; a list
//	                  replaced from a startup source (--load, --load-dir) or a LOAD REPLACE
//	                  has the SHA-256 of that content too, loadedSha256 (hex)
//	loadFailures      STATUS: the startup loads that failed, in load order, each with its list
//	                  ("" when a directory or the init files could not be listed), its source
//	                  (a path, DIR=REGEX, or initFileAtStartup) and its error; omitted when none
//	config            CONFIG: the settings under the original's keys
//	error, reason     on failure: the original's message and one word for programs
//
// The HTTP status says the outcome too: 200 OK; 400 missing or invalid parameter (WAIT
// included), a regex that does not compile, is too long or too costly, or times out, a file name
// that leads to no data file (a directory, a name too long for the file system, ...); 401 bad
// token; 403 STOP disabled; 404 unknown list, empty list, not enough lines, no match, unknown
// command, file not found; 409 duplicate on UNIQUE; 413 body too large, or a line over
// --max-line-bytes; 500 the server's file system failed (permissions, a full disk, ...); 503
// server starting or stopping, or a change the journal could not record; 507 a list or the store
// full (--max-lines-per-list, --max-total-bytes).
type jsonAnswer struct {
	OK      bool              `json:"ok"`
	Command string            `json:"command"`
	Value   *string           `json:"value,omitempty"`
	Values  []string          `json:"values,omitzero"`
	Length  *int              `json:"length,omitempty"`
	Lists   []jsonList        `json:"lists,omitzero"`
	Total   *int              `json:"total,omitempty"`
	Failed  []jsonLoadFailure `json:"loadFailures,omitzero"`
	Config  map[string]string `json:"config,omitzero"`
	Error   string            `json:"error,omitempty"`
	Reason  string            `json:"reason,omitempty"`
}

// jsonList is one list of a STATUS answer.
type jsonList struct {
	Name         string `json:"name"`
	Length       int    `json:"length"`
	LoadedSHA256 string `json:"loadedSha256,omitempty"`
}

// jsonLoadFailure is one failed startup load of a STATUS answer.
type jsonLoadFailure struct {
	List   string `json:"list"`
	Source string `json:"source"`
	Error  string `json:"error"`
}

func newJSONAnswer(rep *reply) jsonAnswer {
	a := jsonAnswer{OK: rep.fail == nil, Command: rep.command, Value: rep.value, Values: rep.values, Length: rep.length}
	if rep.fail != nil {
		a.Error, a.Reason = rep.fail.message, rep.fail.reason
		return a
	}
	switch rep.layout {
	case layoutStatus:
		a.Lists = make([]jsonList, 0, len(rep.lists)) // an empty server lists [], not null
		total := 0
		for _, l := range rep.lists {
			a.Lists = append(a.Lists, jsonList{Name: l.Name, Length: l.Length, LoadedSHA256: l.Digest})
			total += l.Length
		}
		a.Total = &total
		for _, f := range rep.failed {
			a.Failed = append(a.Failed, jsonLoadFailure{List: f.list, Source: f.source, Error: f.message})
		}
	case layoutConfig:
		a.Config = make(map[string]string, len(rep.config))
		for _, c := range rep.config {
			a.Config[c.key] = c.value
		}
	}
	return a
}

// writeJSON sends rep's JSON form, always UTF-8 as JSON requires.
func writeJSON(w http.ResponseWriter, rep *reply) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(newJSONAnswer(rep)) // strings, numbers and bools only: it cannot fail
	status := http.StatusOK
	if rep.fail != nil {
		status = rep.fail.status
	}
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Cache-Control"] = cacheControl
	h["Pragma"] = pragma
	h["Expires"] = expires
	h["Content-Length"] = []string{strconv.Itoa(body.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}
