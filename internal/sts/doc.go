// Package sts is the table server's HTTP protocol: a drop-in replacement for the JMeter "HTTP
// Simple Table Server" (see the protocol description in the README). It parses requests with the
// original's rules, runs the commands against a store.Store, and answers with the original's
// HTML bodies byte for byte, or with the JSON form when a client opts in. It also loads lists at
// startup, and serves the health and metrics endpoints, authentication, blocking reads, leases,
// REQUEST_ID retries and the bulk load/export extensions.
//
// Its files follow a request, and each refers only to files of the stages before it
// (TestFilesReferOneWay checks that no two files refer to each other):
//
//   - server.go, config.go, activity.go, charset.go: the Server, its settings, counters and
//     charsets;
//   - request.go, auth.go: a request decoded (package form) and its token checked;
//   - reply.go, reply_failures.go: what a command produces, and the failures of the store, of
//     files, names and leases turned into the original's KO;
//   - params.go: the parameters (FILENAME, enumerated values, numbers, WAIT, identifiers);
//   - cmd_*.go: the commands, one file by what they serve (read, add, list, lease, files,
//     admin, help, reload), with startup.go, the startup loading that INITFILE and RELOAD share;
//   - routes.go: the command a path names, its methods and its run;
//   - answer.go, answer_html.go, answer_json.go, answer_headers.go: a reply rendered in the
//     original's HTML or in the JSON form;
//   - respond.go, requestid.go: sending an answer or refusing to run a command, and the
//     REQUEST_ID that runs a change once;
//   - ui.go, handler.go, transport.go: the web page mounted, the handler of every path, the
//     net/http server.
//
// The package holds no lock of its own: the Server's changing state is atomic (its phase, the
// auth token, the startup failures, the page's counters), and every list's lock is the store's.
package sts
