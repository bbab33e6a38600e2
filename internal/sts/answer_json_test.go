package sts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// getJSON sends a GET with the JSON opt-in (the Accept header, or FORMAT=JSON already in the
// target) and decodes the answer into a generic map, so that absent fields are seen as absent.
func (ts *testServer) getJSON(t *testing.T, target string, viaHeader bool) (int, map[string]any) {
	t.Helper()
	var header []string
	if viaHeader {
		header = []string{"Accept", "text/html;q=0.5, application/json"}
	}
	a := ts.do(t, http.MethodGet, target, "", "", header...)
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q", target, ct)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(a.body), &m); err != nil {
		t.Fatalf("%s: %v in %q", target, err, a.body)
	}
	return a.status, m
}

func TestJSONForm(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AllowStop = false })
	// The empty server's STATUS, which the operator polls.
	status, m := ts.getJSON(t, "/sts/STATUS", true)
	if want := map[string]any{"ok": true, "command": "STATUS", "lists": []any{}, "total": 0.0}; status != 200 || !reflect.DeepEqual(m, want) {
		t.Errorf("empty STATUS: %d %v", status, m)
	}
	ts.loadList(t, "a.txt", "one", "two", "three")
	ts.get(t, "/sts/ADD?FILENAME=b&LINE=x")

	tests := []struct {
		target string
		status int
		want   map[string]any
	}{
		{"/sts/READ?FILENAME=a.txt&FORMAT=JSON", 200, map[string]any{"ok": true, "command": "READ", "value": "one"}},
		{"/sts/READMULTI?FILENAME=a.txt&NB_LINES=2&FORMAT=JSON", 200, map[string]any{"ok": true, "command": "READMULTI", "values": []any{"two", "three"}}},
		{"/sts/LENGTH?FILENAME=a.txt&FORMAT=JSON", 200, map[string]any{"ok": true, "command": "LENGTH", "length": 3.0}},
		{"/sts/FIND?FILENAME=a.txt&LINE=one&FORMAT=JSON", 200, map[string]any{"ok": true, "command": "FIND", "value": "one"}},
		{"/sts/ADD?FILENAME=b&LINE=y&FORMAT=JSON", 200, map[string]any{"ok": true, "command": "ADD"}},
		{"/sts/STATUS?FORMAT=JSON", 200, map[string]any{"ok": true, "command": "STATUS", "total": 5.0,
			"lists": []any{map[string]any{"name": "a.txt", "length": 3.0}, map[string]any{"name": "b", "length": 2.0}}}},
		{"/sts/INITFILE?FILENAME=a.txt&FORMAT=JSON", 200, map[string]any{"ok": true, "command": "INITFILE", "length": 3.0}},
		{"/sts/RESET?FILENAME=none&FORMAT=JSON", 200, map[string]any{"ok": true, "command": "RESET"}},
		{"/sts/READ?FORMAT=JSON", 400, koJSON("READ", "FILENAME parameter was missing !", "missing_parameter")},
		{"/sts/READ?FILENAME=a.txt&KEEP=no&FORMAT=JSON", 400, koJSON("READ", "KEEP value has to be TRUE or FALSE !", "invalid_parameter")},
		{"/sts/FIND?FILENAME=a.txt&LINE=(&FIND_MODE=REGEX_FIND&FORMAT=JSON", 400, koJSON("FIND", "Regex compile error !", "regex_error")},
		{"/sts/INITFILE?FILENAME=..&FORMAT=JSON", 400, koJSON("INITFILE", "Illegal character found !", "illegal_name")},
		{"/sts/READ?FILENAME=zz&FORMAT=JSON", 404, koJSON("READ", "zz not loaded yet !", "not_loaded")},
		{"/sts/READMULTI?FILENAME=a.txt&NB_LINES=9&FORMAT=JSON", 404, koJSON("READMULTI", "Number lines to read greater than file size, 9 greater than 3 !", "short_list")},
		{"/sts/FIND?FILENAME=a.txt&LINE=nothing&FORMAT=JSON", 404, koJSON("FIND", "Not find !", "no_match")},
		{"/sts/INITFILE?FILENAME=nofile&FORMAT=JSON", 404, koJSON("INITFILE", "file not found !", "file_not_found")},
		{"/sts/SAVE?FILENAME=zz&FORMAT=JSON", 404, koJSON("SAVE", "LinkedList not found !", "not_loaded")},
		{"/sts/NOPE?FORMAT=JSON", 404, koJSON("", "unknown command !", "unknown_command")},
		{"/sts/ADD?FILENAME=b&LINE=x&UNIQUE=TRUE&FORMAT=JSON", 409, koJSON("ADD", "ENTRY already exists !", "duplicate")},
		{"/sts/STOP?FORMAT=JSON", 403, koJSON("STOP", "STOP is disabled on this server !", "stop_disabled")},
	}
	for _, tt := range tests {
		status, m := ts.getJSON(t, tt.target, false)
		if status != tt.status || !reflect.DeepEqual(m, tt.want) {
			t.Errorf("%s: %d %v\nwant %d %v", tt.target, status, m, tt.status, tt.want)
		}
	}
	ts.get(t, "/sts/RESET?FILENAME=b")
	ts.get(t, "/sts/READ?FILENAME=a.txt&KEEP=FALSE")
	ts.get(t, "/sts/READMULTI?FILENAME=a.txt&KEEP=FALSE&NB_LINES=2")
	if status, m := ts.getJSON(t, "/sts/READ?FILENAME=a.txt", true); status != 404 || m["reason"] != "empty" {
		t.Errorf("empty list: %d %v", status, m)
	}
	status, m = ts.getJSON(t, "/sts/CONFIG?FORMAT=JSON", false)
	if config, _ := m["config"].(map[string]any); status != 200 || config["jmeterPlugin.sts.port"] != "9191" || config["databaseIsEmpty"] != "false" {
		t.Errorf("CONFIG: %d %v", status, m)
	}
	// Other FORMAT values are ordinary parameters: the original's answer.
	ts.expect(t, "/sts/LENGTH?FILENAME=a.txt&FORMAT=json", okBody("0"))
}

func koJSON(command, message, reason string) map[string]any {
	return map[string]any{"ok": false, "command": command, "error": message, "reason": reason}
}

func TestJSONOptInByAccept(t *testing.T) {
	ts := startServer(t)
	ts.get(t, "/sts/ADD?FILENAME=a&LINE=x")
	for accept, json := range map[string]bool{
		"application/json":                        true,
		"Application/JSON; charset=utf-8":         true,
		"text/html;q=0.9, application/json;q=0.1": false, // HTML preferred
		"text/html;q=0.5, application/json":       true,
		"application/json, text/plain, */*":       false, // axios' default: recorded Header Managers carry it
		"application/json, */*;q=0.1":             true,
		"text/*;q=0.8, application/json;q=0.9":    true,
		"application/json, text/plain":            false,
		"application/*, application/json":         false,
		"application/json, text/html":             false, // a tie keeps the original's form
		"text/*, application/json":                false,
		"text/html, application/json;q=0":         false,
		"application/json;q=0, text/html":         false,
		"application/json; q=0.000":               false,
		"text/html, */*":                          false,
		"application/jsonx, text/json":            false,
		"application/json;q=0;x":                  false, // malformed: no opt-in
		"application/json;q=0.5;x, */*;q=0.1":     false,
		"application/json;q=2, */*":               false,
		"application/json;q=inf":                  false,
		"application/json;q=NaN":                  false,
		"application/json, text/html;x":           false, // a malformed other type still counts
		"application/json;q=1.0, text/html;q=0.5": true,
	} {
		a := ts.do(t, http.MethodGet, "/sts/LENGTH?FILENAME=a", "", "", "Accept", accept)
		if got := a.header.Get("Content-Type") == "application/json"; got != json {
			t.Errorf("Accept: %s: %s %q", accept, a.header.Get("Content-Type"), a.body)
		}
	}
}

func TestJSONCommandIsACommandOrEmpty(t *testing.T) {
	ts := startServer(t)
	// "command" names the command a request ran; a request that runs none has "".
	for _, tt := range []struct {
		target, command string
		status          int
	}{
		{"/sts/LENGTH?FILENAME=a&FORMAT=JSON", "LENGTH", http.StatusNotFound},
		{"/nope?FORMAT=JSON", "", http.StatusNotFound},
		{"/sts/NOPE/READ?FORMAT=JSON", "", http.StatusNotFound},
		{"/sts/read?FORMAT=JSON", "", http.StatusNotFound},
		{"/sts/READ?FILENAME=%zz", "", http.StatusBadRequest},
	} {
		status, m := ts.getJSON(t, tt.target, true)
		if status != tt.status || m["command"] != tt.command {
			t.Errorf("%s: %d %v, want %d and command %q", tt.target, status, m, tt.status, tt.command)
		}
	}
	// PUT does not reach ADD: an unknown command too.
	a := ts.do(t, http.MethodPut, "/sts/ADD?FILENAME=a&LINE=x&FORMAT=JSON", "", "")
	if a.status != http.StatusNotFound || !strings.Contains(a.body, `"command":""`) {
		t.Errorf("PUT ADD: %d %s", a.status, a.body)
	}
}

func TestJSONFileErrors(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AddTimestamp = false })
	if err := os.Mkdir(filepath.Join(ts.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts.get(t, "/sts/ADD?FILENAME=adir&LINE=x")
	ts.get(t, "/sts/ADD?FILENAME=&LINE=x")
	ts.get(t, "/sts/ADD?FILENAME=a%00b&LINE=x")
	ts.get(t, "/sts/ADD?FILENAME=ok&LINE=x")
	long := strings.Repeat("%E2%82%AC", 128) // 128 characters, 384 bytes: too long for the file system
	ts.get(t, "/sts/ADD?FILENAME="+long+"&LINE=x")
	// A name that leads to something that is no data file is the client's mistake: 400.
	for target, message := range map[string]string{
		"/sts/INITFILE?FILENAME=adir": "adir (Is a directory)",
		"/sts/INITFILE?FILENAME=":     ". (Is a directory)",
		"/sts/SAVE?FILENAME=adir":     "adir (Is a directory)",
		"/sts/SAVE?FILENAME=":         ". (Is a directory)",
		"/sts/SAVE?FILENAME=" + long:  strings.Repeat("€", 128) + " (File name too long)",
	} {
		status, m := ts.getJSON(t, target+"&FORMAT=JSON", false)
		if status != http.StatusBadRequest || m["reason"] != "file_error" || m["error"] != message {
			t.Errorf("%s: %d %v, want 400 file_error %q", target, status, m, message)
		}
	}
	// A dataset directory that is gone is the server's failure: 500.
	if err := os.RemoveAll(ts.dir); err != nil {
		t.Fatal(err)
	}
	if status, m := ts.getJSON(t, "/sts/SAVE?FILENAME=ok&FORMAT=JSON", false); status != http.StatusInternalServerError || m["reason"] != "io_error" {
		t.Errorf("SAVE into a missing directory: %d %v", status, m)
	}
}

// STATUS names the content each list was last replaced with from a dataset source: a startup
// file (--load) or a LOAD REPLACE body sent with its SHA256, by the SHA-256 of its bytes. Changes
// on top of it keep it; INITFILE and a LOAD REPLACE without SHA256, a client's content, drop it;
// a wrong SHA256 is refused; other lists have none.
func TestStatusNamesTheContentListsWereLoadedFrom(t *testing.T) {
	sources := t.TempDir()
	writeFiles(t, sources, map[string]string{"users.csv": "u1\r\nu2\n"})
	ts := startServer(t, func(c *Config) { c.Loads = []Load{{List: "users", Path: filepath.Join(sources, "users.csv")}} })
	ts.srv.LoadAtStartup(context.Background())
	sha := func(content string) string {
		sum := sha256.Sum256([]byte(content))
		return hex.EncodeToString(sum[:])
	}
	loaded := func() map[string]any {
		t.Helper()
		_, m := ts.getJSON(t, "/sts/STATUS", true)
		got := map[string]any{}
		for _, l := range m["lists"].([]any) {
			l := l.(map[string]any)
			got[l["name"].(string)] = l["loadedSha256"]
		}
		return got
	}
	post := func(target, body string) {
		t.Helper()
		if a := ts.do(t, http.MethodPost, target, "text/plain", body); a.status != http.StatusOK {
			t.Fatalf("%s: %d %q", target, a.status, a.body)
		}
	}

	ts.get(t, "/sts/ADD?FILENAME=queue&LINE=j1")
	post("/sts/LOAD?FILENAME=cards&SHA256="+strings.ToUpper(sha("c1\nc2\n")), "c1\nc2\n")
	post("/sts/LOAD?FILENAME=client", "x\n") // no SHA256: a client's own content, no dataset's
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=cards&SHA256="+sha("other"), "text/plain", "c9\n"); a.body != koBody("SHA256 does not match the body !") {
		t.Errorf("LOAD with a wrong SHA256: %q", a.body)
	}
	want := map[string]any{"users": sha("u1\r\nu2\n"), "cards": sha("c1\nc2\n"), "queue": nil, "client": nil}
	if got := loaded(); !maps.Equal(got, want) {
		t.Errorf("after the startup load and a LOAD: %v, want %v", got, want)
	}

	ts.get(t, "/sts/READ?FILENAME=users&KEEP=FALSE")
	post("/sts/LOAD?FILENAME=cards&MODE=LAST", "c3\n")
	if got := loaded(); !maps.Equal(got, want) {
		t.Errorf("after a consume and a LOAD LAST: %v, want %v", got, want)
	}

	ts.writeFile(t, "users", "f1\n")
	ts.expect(t, "/sts/INITFILE?FILENAME=users", okBody("1"))
	post("/sts/LOAD?FILENAME=cards&MODE=REPLACE", "d1\n")
	want["users"], want["cards"] = nil, nil
	if got := loaded(); !maps.Equal(got, want) {
		t.Errorf("after INITFILE and a second LOAD REPLACE: %v, want %v", got, want)
	}
}
