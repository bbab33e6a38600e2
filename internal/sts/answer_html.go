package sts

import (
	"bufio"
	"net/http"
	"strconv"
)

// The original's HTML bodies. Lines (READ, READMULTI, FIND) go out raw, as the original sends
// them and as plans' regular expressions expect; what a client could use to write markup into a
// page of its own making is escaped (appendEscaped): KO messages, which echo FILENAME and other
// parameters, list names in STATUS and settings in CONFIG. Every HTML answer also carries
// contentSecurity (answer_headers.go), so that a browser runs no script a line may hold.
const (
	okHead     = "<html><title>OK</title>\n<body>"
	koHead     = "<html><title>KO</title>\n<body>Error : "
	bodyEnd    = "</body>\n</html>"
	bodyEndRaw = "</body></html>" // STATUS and CONFIG end without the "\n"
	lineBreak  = "<br />\n"
)

// appendEscaped appends s to b as HTML text: &, < and > as entities, and a control character
// (a newline that would forge a STATUS row, say) as a numeric reference. Quotes stay, since no
// text goes in an attribute, and so do the original's own messages ("Can't parse ...").
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		var ref string
		switch {
		case c == '&':
			ref = "&amp;"
		case c == '<':
			ref = "&lt;"
		case c == '>':
			ref = "&gt;"
		case c < 0x20 || c == 0x7f:
			ref = "&#" + strconv.Itoa(int(c)) + ";"
		default:
			continue
		}
		b = append(append(b, s[start:i]...), ref...)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// renderHTML returns the original's body for rep.
func renderHTML(rep *reply) []byte {
	if rep.fail != nil {
		return koHTML(rep.fail.message)
	}
	switch rep.layout {
	case layoutMulti:
		b := append(make([]byte, 0, 64), okHead+"\n"...)
		for _, line := range rep.values {
			b = append(append(b, line...), lineBreak...)
		}
		return append(b, bodyEnd...)
	case layoutStatus, layoutReload:
		if len(rep.lists) == 0 && rep.layout == layoutStatus {
			return koHTML("Database was empty !")
		}
		b := append(make([]byte, 0, 64), okHead+"\n"...)
		for _, l := range rep.lists {
			b = append(appendEscaped(b, l.Name), " = "...)
			b = strconv.AppendInt(b, int64(l.Length), 10)
			b = append(b, lineBreak...)
		}
		return append(b, bodyEndRaw...)
	case layoutConfig:
		b := append(make([]byte, 0, 512), okHead+"\n"...)
		for i, c := range rep.config {
			b = appendEscaped(append(append(b, c.key...), '='), c.value)
			// The original prints its first two settings on one line.
			if i == 0 {
				b = append(b, "<br />"...)
			} else {
				b = append(b, lineBreak...)
			}
		}
		return append(b, bodyEndRaw...)
	case layoutHelp:
		return []byte(rep.text())
	}
	text := rep.text()
	b := make([]byte, 0, len(okHead)+len(text)+len(bodyEnd))
	return append(append(append(b, okHead...), text...), bodyEnd...)
}

func koHTML(message string) []byte {
	b := make([]byte, 0, len(koHead)+len(message)+len(bodyEnd))
	return append(appendEscaped(append(b, koHead...), message), bodyEnd...)
}

// writeHTML sends an HTML body with one Content-Type (the original sends two; clients use the
// last, which is this one) and the original's no-cache headers. Content-Length is set
// explicitly so that HEAD answers carry the length of the body they omit.
func (s *Server) writeHTML(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = s.htmlContentType
	h["Content-Security-Policy"] = contentSecurity
	setNoCache(h)
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client that went away is no error of ours
}

// writeExport streams lines as text in the write charset, one line and "\n" each.
func (s *Server) writeExport(w http.ResponseWriter, lines []string) {
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=" + s.cfg.CharsetWrite}
	setNoCache(h)
	w.WriteHeader(http.StatusOK)
	out := bufio.NewWriterSize(encodeWriter(s.charset.write, w), 64<<10)
	for _, line := range lines {
		if _, err := out.WriteString(line); err != nil {
			return
		}
		if err := out.WriteByte('\n'); err != nil {
			return
		}
	}
	_ = out.Flush()
}

// writePlain sends a text/plain answer: the health endpoints, and the original's transport
// errors, which carry no cache headers.
func writePlain(w http.ResponseWriter, status int, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain") // the original's, to the byte
	h.Set("Content-Length", strconv.Itoa(len(text)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text))
}
