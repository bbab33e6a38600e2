package sts

import (
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
	if rep.length != nil {
		n := int64(*rep.length)
		a.Length = &n
	}
	if rep.fail != nil {
		a.Error, a.Reason = rep.fail.message, rep.fail.reason
		return a
	}
	switch rep.layout {
	case layoutStatus:
		a.Lists = make([]protocol.List, 0, len(rep.lists)) // an empty server lists [], not null
		var total int64
		for _, l := range rep.lists {
			a.Lists = append(a.Lists, protocol.List{Name: l.Name, Length: int64(l.Length), LoadedSHA256: l.Digest})
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
