package webui

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// shownBytes is how much of a line the list page shows: a longer line is cut, with its length
// and a link that downloads it whole.
const shownBytes = 300

// searchBatch is how many lines a search reads from the store at a time.
const searchBatch = 4096

// findModes are FIND's modes, as the search form offers them.
var findModes = []string{"SUBSTRING", "EQUALS", "REGEX_FIND", "REGEX_MATCH"}

// listPage is what the list page shows.
type listPage struct {
	Name    string
	Path    string // the page's path, the name escaped
	Length  int
	Offset  int
	Lines   []shownLine
	Prev    int // offsets of the pager; -1: none
	Next    int
	Last    int
	Search  *search
	Modes   []string
	Confirm bool // ask to confirm a RESET
	Stop    bool // the list is the STOP flag
}

// shownLine is a line as the page shows it.
type shownLine struct {
	Position int // 0-based; the page shows it 1-based
	Text     string
	Cut      bool
	Bytes    int
}

func showLine(pos int, line string) shownLine {
	l := shownLine{Position: pos, Text: line, Bytes: len(line)}
	if len(line) > shownBytes {
		cut := shownBytes
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		l.Text, l.Cut = line[:cut], true
	}
	return l
}

// search is a search of the list with FIND's modes, in place: it moves no line (a FIND with
// KEEP=TRUE would move its hit to the end of the list).
type search struct {
	Query    string
	Mode     string
	From     int
	Hits     []shownLine
	NextFrom int // where to go on; -1 when the list was searched to its end
	Problem  string
}

// listRoute serves /ui/lists/<name>, the name path-escaped: read from the escaped path, since a
// list's name may hold a slash.
func (u *UI) listRoute(w http.ResponseWriter, r *http.Request, sess session) {
	name, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), Prefix+"lists/"))
	if err != nil {
		u.notFound(w, r, sess, "That is not a list's address.")
		return
	}
	if r.Method == http.MethodPost {
		u.change(w, r, sess, name)
		return
	}
	q := r.URL.Query()
	switch {
	case q.Has("export"):
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
		u.opt.Protocol.Export(w, r, name)
	case q.Has("line"):
		u.downloadLine(w, r, sess, name, q.Get("line"))
	default:
		u.showList(w, r, sess, name, http.StatusOK, "", "")
	}
}

func listPath(name string) string { return Prefix + "lists/" + url.PathEscape(name) }

// showList renders the list page: a page of lines by position, and a search when asked.
func (u *UI) showList(w http.ResponseWriter, r *http.Request, sess session, name string, status int, message, problem string) {
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	if at, err := strconv.Atoi(q.Get("at")); err == nil {
		offset = at - 1 // the "go to line" form counts from 1, as the page shows lines
	}
	offset = max(offset, 0)
	lines, length, err := u.opt.Store.Page(r.Context(), name, offset, pageSize)
	if errors.Is(err, store.ErrNotLoaded) {
		u.notFound(w, r, sess, fmt.Sprintf("There is no list named %q.", name))
		return
	}
	if err != nil {
		u.fail(w, r, sess, http.StatusServiceUnavailable, "The list could not be read: "+err.Error())
		return
	}
	if offset >= length && length > 0 {
		// Past the end (the list shrank): the last page.
		offset = (length - 1) / pageSize * pageSize
		if lines, length, err = u.opt.Store.Page(r.Context(), name, offset, pageSize); err != nil {
			u.fail(w, r, sess, http.StatusServiceUnavailable, "The list could not be read: "+err.Error())
			return
		}
	}
	p := listPage{Name: name, Path: listPath(name), Length: length, Offset: offset, Prev: -1, Next: -1, Last: -1,
		Modes: findModes, Confirm: q.Get("confirm") == "reset", Stop: name == StopList}
	for i, line := range lines {
		p.Lines = append(p.Lines, showLine(offset+i, line))
	}
	if offset > 0 {
		p.Prev = max(0, offset-pageSize)
	}
	if offset+pageSize < length {
		p.Next = offset + pageSize
		p.Last = (length - 1) / pageSize * pageSize
	}
	if query := q.Get("q"); query != "" {
		p.Search = u.search(r, name, query, q.Get("mode"), q.Get("from"))
	}
	if message == "" {
		message = doneMessage(q)
	}
	u.render(w, status, "list.html", page{Title: name, CSRF: sess.csrf, Auth: sess.auth, Message: message, Error: problem, Data: p})
}

// doneMessage is the message of the change a redirect came from.
func doneMessage(q url.Values) string {
	switch q.Get("done") {
	case "added":
		return "Line added."
	case "reset":
		return "The list is now empty."
	case "loaded":
		n, _ := strconv.Atoi(q.Get("n"))
		return fmt.Sprintf("Loaded %d lines.", n)
	}
	return ""
}

// search finds up to a page of lines that FIND's mode accepts, from position from on, reading the
// list a batch at a time: the regular expression's time limit is the protocol's, for the whole
// search, so a costly one stops with the place to go on from.
func (u *UI) search(r *http.Request, name, query, mode, fromText string) *search {
	s := &search{Query: query, Mode: mode, NextFrom: -1}
	if !validMode(mode) {
		s.Mode = "SUBSTRING"
	}
	s.From, _ = strconv.Atoi(fromText)
	s.From = max(s.From, 0)
	match, err := u.opt.Protocol.Matcher(s.Mode, query)
	if err != nil {
		s.Problem = "The regular expression is not valid: " + err.Error()
		return s
	}
	for at := s.From; ; at += searchBatch {
		lines, length, err := u.opt.Store.Page(r.Context(), name, at, searchBatch)
		if err != nil {
			s.Problem = "The list could not be read: " + err.Error()
			return s
		}
		for i, line := range lines {
			ok, err := match(line)
			if err != nil {
				s.Problem = fmt.Sprintf("The search stopped at line %d: %v.", at+i+1, err)
				s.NextFrom = at + i
				return s
			}
			if !ok {
				continue
			}
			if len(s.Hits) == pageSize {
				s.NextFrom = at + i
				return s
			}
			s.Hits = append(s.Hits, showLine(at+i, line))
		}
		if at+searchBatch >= length {
			return s
		}
	}
}

func validMode(mode string) bool {
	for _, m := range findModes {
		if m == mode {
			return true
		}
	}
	return false
}

// downloadLine answers one line whole, for a line too long to show.
func (u *UI) downloadLine(w http.ResponseWriter, r *http.Request, sess session, name, position string) {
	pos, err := strconv.Atoi(position)
	if err != nil || pos < 0 {
		u.fail(w, r, sess, http.StatusBadRequest, "A line is named by its position, a number from 0.")
		return
	}
	lines, _, err := u.opt.Store.Page(r.Context(), name, pos, 1)
	switch {
	case errors.Is(err, store.ErrNotLoaded):
		u.notFound(w, r, sess, fmt.Sprintf("There is no list named %q.", name))
		return
	case err != nil:
		u.fail(w, r, sess, http.StatusServiceUnavailable, "The list could not be read: "+err.Error())
		return
	case len(lines) == 0:
		u.notFound(w, r, sess, fmt.Sprintf("The list has no line %d any more.", pos+1))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fmt.Sprintf("%s-line-%d.txt", name, pos+1)}))
	_, _ = io.WriteString(w, lines[0])
}

// change runs a form's change through the protocol and goes back to the list page, or shows the
// page with the protocol's message and status.
func (u *UI) change(w http.ResponseWriter, r *http.Request, sess session, name string) {
	action := r.URL.Query().Get("action")
	if action == "" {
		action = r.PostFormValue("action")
	}
	var out Outcome
	var done string
	switch action {
	case "add":
		params := map[string]string{"FILENAME": name, "LINE": r.PostFormValue("line"), "ADD_MODE": "LAST", "UNIQUE": "FALSE"}
		if r.PostFormValue("where") == "FIRST" {
			params["ADD_MODE"] = "FIRST"
		}
		if r.PostFormValue("unique") != "" {
			params["UNIQUE"] = "TRUE"
		}
		out, done = u.opt.Protocol.Run(r.Context(), protocol.CmdAdd, params, nil), "added"
	case "reset":
		out, done = u.opt.Protocol.Run(r.Context(), protocol.CmdReset, map[string]string{"FILENAME": name}, nil), "reset"
	case "load":
		var problem string
		var status int
		if out, status, problem = u.upload(w, r, name); problem != "" {
			u.showList(w, r, sess, name, status, "", problem)
			return
		}
		done = "loaded&n=" + out.Text
	default:
		u.fail(w, r, sess, http.StatusBadRequest, "Unknown change.")
		return
	}
	if !out.OK {
		u.showList(w, r, sess, name, out.Status, "", out.Text)
		return
	}
	http.Redirect(w, r, listPath(name)+"?done="+done, http.StatusSeeOther)
}

// upload reads the file of the upload form (the body, framing included, is within MaxBodyBytes),
// checks it is text in the read charset and LOADs it. A problem means nothing was loaded.
func (u *UI) upload(w http.ResponseWriter, r *http.Request, name string) (Outcome, int, string) {
	max := u.opt.MaxBodyBytes
	parts, err := r.MultipartReader()
	if err != nil {
		return Outcome{}, http.StatusBadRequest, "The upload is not a file form."
	}
	mode := "REPLACE"
	var file []byte
	var got bool
	for {
		part, err := parts.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Outcome{}, uploadStatus(err), uploadProblem(err, max)
		}
		switch part.FormName() {
		case "mode":
			v, _ := io.ReadAll(io.LimitReader(part, 16))
			mode = string(v)
		case "file":
			if file, err = io.ReadAll(part); err != nil {
				return Outcome{}, uploadStatus(err), uploadProblem(err, max)
			}
			got = true
		}
	}
	if !got {
		return Outcome{}, http.StatusBadRequest, "Choose a file to upload."
	}
	if err := u.opt.Charset.Check(file); err != nil {
		return Outcome{}, http.StatusUnprocessableEntity, fmt.Sprintf("The file is not text in %s (the server's read charset): %v. Nothing was loaded.", u.opt.Charset.Name(), err)
	}
	out := u.opt.Protocol.Run(r.Context(), protocol.CmdLoad, map[string]string{"FILENAME": name, "MODE": mode}, file)
	if !out.OK {
		return out, out.Status, out.Text + " Nothing was loaded."
	}
	return out, 0, ""
}

func uploadStatus(err error) int {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func uploadProblem(err error, max int64) string {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fmt.Sprintf("The upload is larger than the server takes (--max-body-bytes, %d bytes, the form around the file included). Nothing was loaded.", max)
	}
	return "The upload could not be read: " + err.Error() + ". Nothing was loaded."
}
