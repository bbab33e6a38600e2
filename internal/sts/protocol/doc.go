// Package protocol holds the JSON form of the table server's answers: the types a client decodes
// an answer into and the reasons a refusal names. The server builds its answers with the same
// types, so a client that decodes into them reads every field the server can send.
//
// A client asks for the JSON form with the parameter FORMAT=JSON or an Accept header that
// prefers application/json; a request whose parameters cannot be read (a body over the server's
// limit, a malformed query) is answered in JSON only when the header asks, so a client sends both.
// The help page stays HTML and is no Answer. A successful EXPORT is plain text, the original's
// file format, unless the JSON form is asked for: then it is an Answer whose Lines are the list's
// lines, exactly (a line may hold CR or LF, which the text form cannot tell from line ends), and
// a LOAD whose Content-Type is application/json takes such lines back as a JSON array of strings.
package protocol
