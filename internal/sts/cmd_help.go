package sts

import (
	"strconv"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/version"
)

// helpTemplate is the page served at /sts and /sts/. It is our own text (the original's page is
// not copied); {BASE} and {VERSION} are filled in when it is served.
const helpTemplate = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Help URL for the dataset</title></head>
<body>
<h4>Help: HTTP Simple Table Server (STS), sts-operator version {VERSION}</h4>
<p>A drop-in replacement for the JMeter plugin "HTTP Simple Table Server" 5.0. Files are read from
and saved to the server's dataset directory. Every answer is HTTP 200; a failure has the
title KO and the body <code>Error : message</code>. Parameter names and values are case-sensitive.</p>

<p><b>INITFILE</b>: load a file of the dataset directory into the list of the same name, replacing it.
Answers the number of lines.<br>
{BASE}/INITFILE?FILENAME=logins.csv</p>

<p><b>READ</b>: read one line. READ_MODE=FIRST (default), LAST or RANDOM; KEEP=TRUE (default) moves the
line to the end of the list, KEEP=FALSE removes it.<br>
{BASE}/READ?READ_MODE=FIRST&amp;KEEP=TRUE&amp;FILENAME=logins.csv</p>

<p><b>READMULTI</b>: read NB_LINES lines at once, with READ_MODE and KEEP as for READ.<br>
{BASE}/READMULTI?FILENAME=logins.csv&amp;NB_LINES=2&amp;READ_MODE=FIRST&amp;KEEP=TRUE</p>

<p><b>FIND</b> (GET or POST): find the first line matching LINE. FIND_MODE=SUBSTRING (default), EQUALS,
REGEX_FIND or REGEX_MATCH (Java regular expressions); KEEP=TRUE (default) moves the line to the end,
KEEP=FALSE removes it.<br>
{BASE}/FIND?LINE=user1&amp;FIND_MODE=EQUALS&amp;KEEP=FALSE&amp;FILENAME=logins.csv<br>
POST {BASE}/FIND with the form FILENAME=logins.csv&amp;LINE=user1&amp;FIND_MODE=SUBSTRING</p>

<p><b>LENGTH</b>: the number of lines of a list.<br>
{BASE}/LENGTH?FILENAME=logins.csv</p>

<p><b>ADD</b> (GET or POST): add LINE to a list, creating it if needed. ADD_MODE=FIRST (default) or LAST;
UNIQUE=TRUE refuses a line already in the list.<br>
{BASE}/ADD?FILENAME=logins.csv&amp;LINE=login3;password3&amp;ADD_MODE=LAST&amp;UNIQUE=FALSE<br>
POST {BASE}/ADD with the form FILENAME=logins.csv&amp;LINE=login4;password4&amp;ADD_MODE=LAST</p>

<p><b>SAVE</b>: write a list to the dataset directory. ADD_TIMESTAMP=true prefixes the file name with
the date and time (yyyyMMdd'T'HH'h'mm'm'ss's.); without it the file of the same name is overwritten.<br>
{BASE}/SAVE?FILENAME=logins.csv&amp;ADD_TIMESTAMP=true</p>

<p><b>STATUS</b>: every list with its number of lines.<br>
{BASE}/STATUS</p>

<p><b>RESET</b>: empty a list (its name stays known).<br>
{BASE}/RESET?FILENAME=logins.csv</p>

<p><b>CONFIG</b>: the server's settings.<br>
{BASE}/CONFIG</p>

<p><b>STOP</b>: answer OK and shut the server down gracefully (it may be disabled).<br>
{BASE}/STOP</p>

<h4>Extensions (an old client never sees them)</h4>
<p><b>JSON answers</b>: send <code>Accept: application/json</code> or the parameter FORMAT=JSON to get
<code>{"ok":true,"command":"READ","value":"..."}</code>, with an HTTP status that says the outcome
(400, 401, 403, 404, 409, 413, 422, 500, 503, 507).<br>
{BASE}/STATUS?FORMAT=JSON</p>
<p><b>LOAD</b> (POST): the request body is a whole file, loaded into a list. MODE=REPLACE (default),
FIRST or LAST. Answers the number of lines loaded. SHA256=&lt;hex&gt;, when given, must be the body's
digest; with MODE=REPLACE, STATUS (JSON) then reports it for the list as loadedSha256 (a REPLACE
without it reports none).<br>
POST {BASE}/LOAD?FILENAME=logins.csv&amp;MODE=LAST with the file as the body</p>
<p><b>EXPORT</b>: a list as plain text, one line each, without consuming it; with FORMAT=JSON, the
exact lines as a JSON array, which a LOAD with Content-Type: application/json takes back.<br>
{BASE}/EXPORT?FILENAME=logins.csv</p>
<p><b>RELOAD</b>: read every startup source again (initFileAtStartup, --load, --load-dir) and replace
its list with it, one list at a time, each in one change: the lists are back to their sources while
the server serves, say between two test runs. FILENAME=&lt;list&gt; reloads only that list. Answers
one "list = lines" row per list reloaded. The leases running on a reloaded list end: their lines
do not come back.<br>
{BASE}/RELOAD</p>
<p><b>Authentication</b>: when the server has a token, send <code>Authorization: Bearer &lt;token&gt;</code>
or the parameter TOKEN=&lt;token&gt;.</p>
<p><b>Blocking reads</b>: READ, READMULTI and FIND accept WAIT=&lt;milliseconds&gt;: instead of answering
"No more line" (or "Not find", or too few lines) at once, the command waits up to that long for the
lines to arrive (ADD, LOAD, INITFILE), waiting reads being served in arrival order. The server caps
the wait (--max-wait). With WAIT, every parameter is checked before the wait.<br>
{BASE}/READ?FILENAME=queue.csv&amp;KEEP=FALSE&amp;WAIT=5000</p>
<p><b>Leases</b>: READ, READMULTI and FIND accept LEASE=&lt;milliseconds&gt; (1 to --max-lease), which
takes the line(s) out of the list as KEEP=FALSE does but gives them back (at the front) unless they are
acknowledged in time; KEEP=TRUE is refused with it. The lease id comes in the header X-STS-Lease (one
for a READMULTI's lines) and its expiry in X-STS-Lease-Expires. MAX_DELIVERIES=&lt;n&gt; (default
--max-deliveries, 0: never) sends a line that came back n times to the list &lt;FILENAME&gt;.dead instead.<br>
{BASE}/READ?FILENAME=queue.csv&amp;KEEP=FALSE&amp;LEASE=30000</p>
<p><b>ACK</b>: end a lease for good, its lines consumed. LEASE=&lt;id&gt; (FILENAME may be left out), or
FILENAME and LINE=&lt;line&gt; for the one line.<br>
{BASE}/ACK?LEASE=&lt;id&gt;<br>
{BASE}/ACK?FILENAME=queue.csv&amp;LINE=user1</p>
<p><b>RELEASE</b>: give a lease's lines (LEASE or FILENAME and LINE) back at once: ADD_MODE=FIRST (default)
or LAST.<br>
{BASE}/RELEASE?LEASE=&lt;id&gt;&amp;ADD_MODE=LAST</p>
<p><b>EXTEND</b>: make a lease (LEASE or FILENAME and LINE) run out LEASE_MS=&lt;milliseconds&gt; from now;
the new expiry is in X-STS-Lease-Expires.<br>
{BASE}/EXTEND?LEASE=&lt;id&gt;&amp;LEASE_MS=60000</p>
<p><b>Retries</b>: a command that changes data sent with REQUEST_ID=&lt;id&gt; (1 to 128 bytes) is run once:
a retry with the same id within --request-id-window gets the first answer and changes nothing; the same
id with another request is refused.<br>
{BASE}/READ?FILENAME=queue.csv&amp;KEEP=FALSE&amp;REQUEST_ID=6f1c2a</p>
<p><b>Limits</b>: a change that would pass --max-lines-per-list, --max-total-bytes, --max-line-bytes or
--max-lists (the number of lists), or a FILENAME longer than --max-name-bytes, is refused with
<code>Limit exceeded: &lt;limit&gt;=&lt;value&gt;</code> and changes nothing. A FILENAME may not hold
control characters (CR, LF, tab, ...).</p>
<p><b>Durability</b>: with --state-dir, every change is in a journal on disk before it is answered,
and a restarted server goes on with the same lists.</p>
<p><b>Health and metrics</b>: /healthz answers ok while the process runs; /readyz once the state is
restored and the startup files are loaded; /metrics in the Prometheus format.</p>
<p><b>Startup loading</b>: the options --init-files (a comma list of files, or a regular expression
with --init-files-regex), --load LIST=PATH and --load-dir DIR=REGEX load lists before /readyz is ok.</p>
</body></html>
`

// help is the help page answer.
func (s *Server) help() reply {
	page := strings.NewReplacer(
		"{BASE}", "http://hostname:"+strconv.Itoa(s.cfg.Port)+"/sts",
		"{VERSION}", version.Version,
	).Replace(helpTemplate)
	return reply{command: protocol.CmdHelp, layout: layoutHelp, value: &page}
}
