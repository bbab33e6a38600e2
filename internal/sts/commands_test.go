package sts

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var months = []string{"Jan", "Feb", "Mar", "Apr", "May", "June"}

func TestRouting(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "a.txt", "x")
	for _, target := range []string{"/sts//", "/sts/read", "/STS/READ", "/sts/READ/", "/sts/READ;jsessionid=1", "/sts/FOO", "/sts/RE+AD?FILENAME=a.txt", "/x/sts/READ"} {
		ts.expect(t, target, koBody("unknown command !"))
	}
	// The path is percent-decoded before routing.
	ts.expect(t, "/sts/%52EAD?FILENAME=a.txt", okBody("x"))
	// Query parameters do not affect routing, and methods are compared case-insensitively.
	a := ts.do(t, "get", "/sts/LENGTH?FILENAME=a.txt", "", "")
	if a.body != okBody("1") {
		t.Errorf("lower-case get: %q", a.body)
	}
}

func TestMethods(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "a.txt", "x")
	// Every command but ADD and FIND answers to the six methods.
	for _, m := range []string{"GET", "POST", "PUT", "DELETE", "OPTIONS"} {
		a := ts.do(t, m, "/sts/LENGTH?FILENAME=a.txt", "", "")
		ts.checkCommandAnswer(t, m+" LENGTH", a)
		if a.body != okBody("1") {
			t.Errorf("%s LENGTH: %q", m, a.body)
		}
	}
	for _, m := range []string{"PUT", "DELETE", "OPTIONS"} {
		for _, target := range []string{"/sts/ADD?FILENAME=a.txt&LINE=y", "/sts/FIND?FILENAME=a.txt&LINE=x"} {
			if a := ts.do(t, m, target, "", ""); a.body != koBody("unknown command !") {
				t.Errorf("%s %s: %q, want unknown command", m, target, a.body)
			}
		}
	}
	if got := ts.lines(t, "a.txt"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("after refused ADD/FIND the list is %q", got)
	}
	for _, m := range []string{"PATCH", "TRACE", "FOO"} {
		a := ts.do(t, m, "/sts/LENGTH?FILENAME=a.txt", "", "")
		if a.status != http.StatusBadRequest || a.body != "BAD REQUEST: Syntax error." ||
			a.header.Get("Content-Type") != "text/plain" {
			t.Errorf("%s: %d %q %q", m, a.status, a.header.Get("Content-Type"), a.body)
		}
	}
}

func TestHeadExecutesTheCommand(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "a.txt", "first", "second")
	a := ts.do(t, http.MethodHead, "/sts/READ?FILENAME=a.txt&KEEP=FALSE", "", "")
	if a.status != http.StatusOK || a.body != "" {
		t.Fatalf("HEAD: %d %q", a.status, a.body)
	}
	if cl := a.header.Get("Content-Length"); cl != strconv.Itoa(len(okBody("first"))) {
		t.Errorf("HEAD Content-Length %q, want the length of OK(first)", cl)
	}
	ts.expect(t, "/sts/READ?FILENAME=a.txt", okBody("second"))
}

func TestResponseHeaders(t *testing.T) {
	ts := startServer(t)
	for _, target := range []string{"/sts/STATUS", "/sts/FOO"} {
		a := ts.do(t, http.MethodGet, target, "", "")
		ts.checkCommandAnswer(t, target, a)
		for name, want := range map[string]string{"Cache-Control": "no-cache, no-store, must-revalidate", "Pragma": "no-cache", "Expires": "0"} {
			if got := a.header.Get(name); got != want {
				t.Errorf("%s: %s %q, want %q", target, name, got, want)
			}
		}
	}
}

func TestRead(t *testing.T) {
	ts := startServer(t)
	ts.expect(t, "/sts/READ", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/READ?FILENAME=logins.csv%20", koBody("logins.csv  not loaded yet !"))
	ts.loadList(t, "m.txt", months...)

	ts.expect(t, "/sts/READ?FILENAME=m.txt&READ_MODE=first", koBody("READ_MODE value has to be FIRST, LAST or RANDOM !"))
	ts.expect(t, "/sts/READ?FILENAME=m.txt&READ_MODE=", koBody("READ_MODE value has to be FIRST, LAST or RANDOM !"))
	ts.expect(t, "/sts/READ?FILENAME=m.txt&KEEP=false", koBody("KEEP value has to be TRUE or FALSE !"))
	ts.expect(t, "/sts/READ?FILENAME=m.txt&KEEP", koBody("KEEP value has to be TRUE or FALSE !"))

	// Defaults FIRST and KEEP=TRUE: the line moves to the end.
	ts.expect(t, "/sts/READ?FILENAME=m.txt", okBody("Jan"))
	want := []string{"Feb", "Mar", "Apr", "May", "June", "Jan"}
	if got := ts.lines(t, "m.txt"); !slices.Equal(got, want) {
		t.Errorf("after READ FIRST KEEP: %q, want %q", got, want)
	}
	// LAST+KEEP returns the same line forever.
	for range 3 {
		ts.expect(t, "/sts/READ?FILENAME=m.txt&READ_MODE=LAST&KEEP=TRUE", okBody("Jan"))
	}
	ts.expect(t, "/sts/READ?FILENAME=m.txt&READ_MODE=LAST&KEEP=FALSE", okBody("Jan"))
	ts.expect(t, "/sts/READ?FILENAME=m.txt&READ_MODE=FIRST&KEEP=FALSE", okBody("Feb"))
	// RANDOM+KEEP moves the chosen line to the end.
	body := ts.get(t, "/sts/READ?FILENAME=m.txt&READ_MODE=RANDOM")
	got := ts.lines(t, "m.txt")
	if body != okBody(got[len(got)-1]) || len(got) != 4 {
		t.Errorf("READ RANDOM gave %q, list now %q", body, got)
	}
	for range 4 {
		ts.get(t, "/sts/READ?FILENAME=m.txt&READ_MODE=RANDOM&KEEP=FALSE")
	}
	// An empty list answers before the parameters are validated.
	ts.expect(t, "/sts/READ?FILENAME=m.txt&READ_MODE=bogus&KEEP=bogus", koBody("No more line !"))
}

func TestReadMulti(t *testing.T) {
	ts := startServer(t)
	ts.expect(t, "/sts/READMULTI?NB_LINES=1", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=1", koBody("m.txt not loaded yet !"))
	ts.loadList(t, "m.txt", months...)

	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=x&READ_MODE=last", koBody("READ_MODE value has to be FIRST, LAST or RANDOM !"))
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=2&KEEP=true", koBody("KEEP value has to be TRUE or FALSE !"))
	parseFailures := map[string]string{
		"":                      "null",
		"&NB_LINES=":            "",
		"&NB_LINES=+2":          " 2",
		"&NB_LINES=2%20":        "2 ",
		"&NB_LINES=2.0":         "2.0",
		"&NB_LINES=1e3":         "1e3",
		"&NB_LINES=0x10":        "0x10",
		"&NB_LINES=99999999999": "99999999999",
		"&NB_LINES=2147483648":  "2147483648",
	}
	for query, echo := range parseFailures {
		ts.expect(t, "/sts/READMULTI?FILENAME=m.txt"+query, koBody("Can't parse integer parameter NB_LINES : "+echo+" !"))
	}
	for _, raw := range []string{"0", "-0", "000", "-5"} {
		ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES="+raw, koBody("Parameter NB_LINES must be greater or equals than 1 : "+raw+" !"))
	}
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=0007", koBody("Number lines to read greater than file size, 7 greater than 6 !"))

	// Java's parseInt quirks that succeed: %2B, leading zeros, Unicode digits.
	multi := func(lines ...string) string {
		return "<html><title>OK</title>\n<body>\n" + strings.Join(lines, "<br />\n") + "<br />\n</body>\n</html>"
	}
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=%2B2", multi("Jan", "Feb"))
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=002", multi("Mar", "Apr"))
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES="+"%D9%A2", multi("May", "June"))   // Arabic-Indic 2
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES="+"%EF%BC%92", multi("Jan", "Feb")) // full-width 2

	// LAST returns lines last-first; LAST+KEEP reverses the tail.
	ts.loadList(t, "m.txt", months...)
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=2&READ_MODE=LAST", multi("June", "May"))
	want := []string{"Jan", "Feb", "Mar", "Apr", "June", "May"}
	if got := ts.lines(t, "m.txt"); !slices.Equal(got, want) {
		t.Errorf("after READMULTI LAST KEEP: %q, want %q", got, want)
	}
	// RANDOM picks without replacement.
	body := ts.get(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=6&READ_MODE=RANDOM&KEEP=FALSE")
	picked := strings.Split(strings.TrimSuffix(strings.TrimPrefix(body, "<html><title>OK</title>\n<body>\n"), "<br />\n</body>\n</html>"), "<br />\n")
	slices.Sort(picked)
	sortedMonths := slices.Sorted(slices.Values(want))
	if !slices.Equal(picked, sortedMonths) {
		t.Errorf("READMULTI RANDOM of the whole list gave %q", picked)
	}
	ts.expect(t, "/sts/READMULTI?FILENAME=m.txt&NB_LINES=garbage", koBody("No more line !"))
}

func TestFind(t *testing.T) {
	ts := startServer(t)
	ts.expect(t, "/sts/FIND?LINE=x", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=x", koBody("f.txt not loaded yet !"))
	ts.get(t, "/sts/ADD?FILENAME=f.txt&LINE=x")
	ts.get(t, "/sts/READ?FILENAME=f.txt&KEEP=FALSE")
	ts.expect(t, "/sts/FIND?FILENAME=f.txt", koBody("No more line !"))

	ts.loadList(t, "f.txt", "apple", "banana", "cherry", "Banana split", "aa", "abab")
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&FIND_MODE=bogus", koBody("Cant't find empty line !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=&FIND_MODE=bogus", koBody("Cant't find empty line !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=x&FIND_MODE=equals&KEEP=bogus", koBody("FIND_MODE value has to be EQUALS, SUBSTRING, REGEX_FIND or REGEX_MATCH !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=x&KEEP=false", koBody("KEEP has to be TRUE or FALSE !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=(&FIND_MODE=REGEX_FIND", koBody("Regex compile error !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=(", koBody("Not find !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=ban&FIND_MODE=EQUALS", koBody("Not find !"))
	before := ts.lines(t, "f.txt")

	// SUBSTRING is case-sensitive; the hit moves to the end with the default KEEP=TRUE.
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=anan", okBody("banana"))
	want := []string{"apple", "cherry", "Banana split", "aa", "abab", "banana"}
	if got := ts.lines(t, "f.txt"); !slices.Equal(got, want) || len(before) != 6 {
		t.Errorf("after FIND KEEP: %q, want %q", got, want)
	}
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=cherry&FIND_MODE=EQUALS&KEEP=FALSE", okBody("cherry"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=%5EB.*t%24&FIND_MODE=REGEX_MATCH", okBody("Banana split"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=an&FIND_MODE=REGEX_MATCH", koBody("Not find !"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=pp&FIND_MODE=REGEX_FIND&KEEP=FALSE", okBody("apple"))
	// Java regex constructs: back-references, look-ahead, (?i).
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=(.)%5C1&FIND_MODE=REGEX_MATCH", okBody("aa"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=(ab)(%3F%3Dab)&FIND_MODE=REGEX_FIND", okBody("abab"))
	ts.expect(t, "/sts/FIND?FILENAME=f.txt&LINE=(%3Fi)BANANA&FIND_MODE=REGEX_MATCH", okBody("banana"))
}

func TestAdd(t *testing.T) {
	ts := startServer(t)
	ts.expect(t, "/sts/ADD?LINE=x", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/ADD?FILENAME=a.txt", koBody("LINE parameter was missing !"))
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !")) // nothing created

	// Bad ADD_MODE or UNIQUE still creates the list.
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE=x&ADD_MODE=last", koBody("ADD_MODE value has to be FIRST or LAST !"))
	ts.expect(t, "/sts/LENGTH?FILENAME=a.txt", okBody("0"))
	ts.expect(t, "/sts/ADD?FILENAME=b.txt&LINE=x&UNIQUE=true", koBody("UNIQUE value has to be TRUE or FALSE !"))
	ts.expect(t, "/sts/LENGTH?FILENAME=b.txt", okBody("0"))

	// ADD defaults to FIRST.
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE=one", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE=two", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE=three&ADD_MODE=LAST", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE=", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE&ADD_MODE=LAST", okBody(""))
	want := []string{"", "two", "one", "three", ""}
	if got := ts.lines(t, "a.txt"); !slices.Equal(got, want) {
		t.Errorf("list %q, want %q", got, want)
	}
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE=two&UNIQUE=TRUE", koBody("ENTRY already exists !"))
	ts.expect(t, "/sts/ADD?FILENAME=a.txt&LINE=Two&UNIQUE=TRUE", okBody(""))

	// No file-name validation: any string without a control character (listname_test.go) is a
	// key. Lines are stored verbatim, markup included.
	long := strings.Repeat("n", 200)
	for _, name := range []string{"..%2Fevil.txt", long, ""} {
		ts.expect(t, "/sts/ADD?FILENAME="+name+"&LINE=%3Cscript%3E%0D%0A%3C%2Fbody%3E", okBody(""))
		ts.expect(t, "/sts/READ?FILENAME="+name, okBody("<script>\r\n</body>"))
	}
}

func TestLengthResetStatus(t *testing.T) {
	ts := startServer(t)
	ts.expect(t, "/sts/LENGTH", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/LENGTH?FILENAME=x", koBody("x not loaded yet !"))
	ts.expect(t, "/sts/RESET", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !"))
	ts.expect(t, "/sts/RESET?FILENAME=unknown", okBody(""))
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !")) // RESET creates no key

	ts.loadList(t, "b.txt", "1", "2")
	ts.get(t, "/sts/ADD?FILENAME=a.txt&LINE=x")
	ts.get(t, "/sts/ADD?FILENAME=&LINE=x")
	ts.get(t, "/sts/ADD?FILENAME=Z&LINE=x")
	ts.expect(t, "/sts/LENGTH?FILENAME=b.txt", okBody("2"))
	ts.expect(t, "/sts/RESET?FILENAME=b.txt", okBody(""))
	ts.expect(t, "/sts/LENGTH?FILENAME=b.txt", okBody("0"))
	// Sorted by name in byte order; the empty key prints as " = 1"; emptied lists stay.
	ts.expect(t, "/sts/STATUS?FILENAME=ignored", "<html><title>OK</title>\n<body>\n = 1<br />\nZ = 1<br />\na.txt = 1<br />\nb.txt = 0<br />\n</body></html>")
}

func TestConfig(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.Port = 9292
		c.AddTimestamp = false
		c.InitFiles = "a.csv, b.csv"
		c.CharsetRead = "ISO-8859-1"
	})
	want := "<html><title>OK</title>\n<body>\n" +
		"jmeterPlugin.sts.loadAndRunOnStartup=false<br />startFromCli=true<br />\n" +
		"jmeterPlugin.sts.port=9292<br />\n" +
		"jmeterPlugin.sts.datasetDirectory=" + ts.dir + "<br />\n" +
		"jmeterPlugin.sts.addTimestamp=false<br />\n" +
		"jmeterPlugin.sts.demon=true<br />\n" +
		"jmeterPlugin.sts.charsetEncodingHttpResponse=UTF-8<br />\n" +
		"jmeterPlugin.sts.charsetEncodingReadFile=ISO-8859-1<br />\n" +
		"jmeterPlugin.sts.charsetEncodingWriteFile=UTF-8<br />\n" +
		"jmeterPlugin.sts.initFileAtStartup=a.csv, b.csv<br />\n" +
		"jmeterPlugin.sts.initFileAtStartupRegex=false<br />\n" +
		"databaseIsEmpty=%s<br />\n" +
		"</body></html>"
	ts.expect(t, "/sts/CONFIG", strings.Replace(want, "%s", "true", 1))
	ts.get(t, "/sts/ADD?FILENAME=x&LINE=y")
	ts.expect(t, "/sts/CONFIG", strings.Replace(want, "%s", "false", 1))

	// The startup scripts' switch, from the properties: shown as it is set.
	ts = startServer(t, func(c *Config) { c.LoadAndRunOnStartup = true })
	if got := ts.get(t, "/sts/CONFIG"); !strings.HasPrefix(got, "<html><title>OK</title>\n<body>\njmeterPlugin.sts.loadAndRunOnStartup=true<br />startFromCli=true<br />\n") {
		t.Errorf("CONFIG with loadAndRunOnStartup: %q", got)
	}
}

func TestStop(t *testing.T) {
	t.Run("allowed", func(t *testing.T) {
		ts := startServer(t)
		select {
		case <-ts.srv.StopRequested():
			t.Fatal("stop requested before STOP")
		default:
		}
		ts.expect(t, "/sts/STOP", okBody(""))
		select {
		case <-ts.srv.StopRequested():
		case <-time.After(5 * time.Second):
			t.Fatal("STOP answered but StopRequested not closed")
		}
		ts.expect(t, "/sts/STOP", okBody("")) // a second STOP is harmless
	})
	t.Run("disabled", func(t *testing.T) {
		ts := startServer(t, func(c *Config) { c.AllowStop = false })
		ts.expect(t, "/sts/STOP", koBody("STOP is disabled on this server !"))
		select {
		case <-ts.srv.StopRequested():
			t.Fatal("a disabled STOP closed StopRequested")
		default:
		}
	})
}

func TestHelp(t *testing.T) {
	ts := startServer(t)
	for _, target := range []string{"/sts", "/sts/", "/sts?x=1"} {
		body := ts.get(t, target)
		for _, want := range []string{"INITFILE", "READMULTI", "FIND", "SAVE", "STOP", "LOAD", "EXPORT", "FORMAT=JSON", "WAIT=", "/metrics", "--state-dir", "version"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the help page does not mention %s", target, want)
			}
		}
	}
	if a := ts.do(t, http.MethodDelete, "/sts/", "", ""); a.status != http.StatusOK || !strings.Contains(a.body, "READMULTI") {
		t.Errorf("DELETE /sts/: %d", a.status)
	}
}
