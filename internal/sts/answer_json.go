package sts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// newJSONAnswer is rep in the JSON form (protocol.Answer documents its fields), which a client
// asks for with Accept: application/json or FORMAT=JSON.
func newJSONAnswer(rep *reply) protocol.Answer {
	a := protocol.Answer{OK: rep.fail == nil, Command: rep.command, Value: rep.value, Values: rep.values}
	if rep.command == protocol.CmdExport {
		a.Values, a.Lines = nil, rep.values
	}
	if rep.length != nil {
		n := int64(*rep.length)
		a.Length = &n
	}
	if rep.lease != "" {
		a.Lease = &rep.lease
	}
	if !rep.expires.IsZero() {
		a.Expires = &rep.expires
	}
	if rep.fail != nil {
		a.Error, a.Reason = rep.fail.message, rep.fail.reason
		if rep.layout != layoutReload { // a failed RELOAD still says what it reloaded
			return a
		}
	}
	switch rep.layout {
	case layoutStatus, layoutReload:
		a.Lists = make([]protocol.List, 0, len(rep.lists)) // an empty server lists [], not null
		var total int64
		for _, l := range rep.lists {
			a.Lists = append(a.Lists, protocol.List{Name: l.Name, Length: int64(l.Length), LoadedSHA256: l.Digest,
				Leased: int64(l.Leased), Returned: l.Returned, DeadLettered: l.DeadLettered})
			total += int64(l.Length)
		}
		a.Total = &total
		for _, f := range rep.failed {
			a.LoadFailures = append(a.LoadFailures, protocol.LoadFailure{List: f.list, Source: f.source, Error: f.message})
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
	if rep.command == protocol.CmdExport && rep.fail == nil {
		writeJSONExport(w, rep.values) // streamed, as the plain form is
		return
	}
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
	setNoCache(h)
	h["Content-Length"] = []string{strconv.Itoa(body.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}

// writeJSONExport streams a successful EXPORT's JSON answer, {"ok":true,"command":"EXPORT",
// "lines":[...]} and "\n" as writeJSON writes it, so that a large list is not held a second time
// as one JSON body.
func writeJSONExport(w http.ResponseWriter, lines []string) {
	h := w.Header()
	h["Content-Type"] = jsonType
	setNoCache(h)
	w.WriteHeader(http.StatusOK)
	out := bufio.NewWriterSize(w, 64<<10)
	var elem bytes.Buffer
	enc := json.NewEncoder(&elem)
	enc.SetEscapeHTML(false)
	_, _ = out.WriteString(`{"ok":true,"command":"` + protocol.CmdExport + `","lines":[`)
	for i, line := range lines {
		elem.Reset()
		if i > 0 {
			elem.WriteByte(',')
		}
		_ = enc.Encode(line) // a string: it cannot fail
		if _, err := out.Write(bytes.TrimSuffix(elem.Bytes(), []byte{'\n'})); err != nil {
			return // the client went away
		}
	}
	_, _ = out.WriteString("]}\n")
	_ = out.Flush()
}
