package protocol

import "time"

// Answer is the JSON form of every command's answer. Fields that do not apply to the command
// are absent: a client tells "not sent" from "zero" by the pointer fields and nil slices.
//
// The HTTP status says the outcome as well: 200 OK; 400 a missing or invalid parameter (WAIT
// included), a regex that does not compile, is too long or too costly, or runs out of time, a
// file name that leads to no data file, a LOAD body sent as JSON that is not an array of strings;
// 401 a bad or missing token; 403 STOP disabled; 404 an unknown list, an empty list, not enough
// lines, no match, an unknown command, a file not found, an unknown lease, a RELOAD of a list
// that no startup source gives;
// 409 a duplicate on UNIQUE, an ACK or EXTEND of a lease that ended, a REQUEST_ID whose first
// request is still running; 422 a REQUEST_ID sent before with another request; 413 a body too large, or a line over --max-line-bytes; 500 the
// server's file system failed; 503 the server starting or stopping, a store that cannot be
// reached, or a change the journal could not record (worth asking again); 507 a list or the
// store full (--max-lines-per-list, --max-total-bytes).
type Answer struct {
	// OK says whether the command succeeded; Error and Reason say why not.
	OK bool `json:"ok"`
	// Command is the command the request ran (READ, STATUS, ...), or "" when the request names
	// none: an unknown command or method, /metrics, or a request that could not be parsed.
	Command string `json:"command"`
	// Value is the line of a READ or FIND. A line may be empty: nil means no line was sent.
	Value *string `json:"value,omitempty"`
	// Values are the lines of a READMULTI, in the order they were picked.
	Values []string `json:"values,omitzero"`
	// Lease is the id of the lease a READ, READMULTI or FIND with LEASE holds its line(s) under
	// (one id for a READMULTI's lines), which ACK, RELEASE and EXTEND take.
	Lease *string `json:"lease,omitempty"`
	// Expires is when that lease, or the one an EXTEND prolonged, runs out (RFC 3339, UTC, to
	// the millisecond): its lines then go back to the list.
	Expires *time.Time `json:"expires,omitempty"`
	// Lines are the lines of an EXPORT, every line of the list in order, each exactly as it is
	// (CR, LF and NUL included); an empty list sends an empty array. LOAD with Content-Type:
	// application/json takes this array back as its body.
	Lines []string `json:"lines,omitzero"`
	// Length is the answer of LENGTH; for INITFILE and LOAD the lines loaded, for SAVE the
	// lines written.
	Length *int64 `json:"length,omitempty"`
	// Lists is every list of a STATUS, sorted by name (byte order); an empty server sends an
	// empty array, not null. For RELOAD, the lists reloaded (a failed RELOAD too), with their
	// lines loaded, the digest of their source and the lines leases held in them.
	Lists []List `json:"lists,omitzero"`
	// Total is the sum of the lengths of a STATUS's (RELOAD's) lists.
	Total *int64 `json:"total,omitempty"`
	// LoadFailures are the startup loads of a STATUS that failed, in load order; absent when
	// none failed. For RELOAD, the sources that could not be reloaded.
	LoadFailures []LoadFailure `json:"loadFailures,omitzero"`
	// Config is the answer of CONFIG: the settings under the original plugin's keys.
	Config map[string]string `json:"config,omitzero"`
	// Error is the original plugin's message for a refusal ("No more line !", ...).
	Error string `json:"error,omitempty"`
	// Reason is one word for programs that says what kind of refusal it was: one of the Reason
	// constants.
	Reason string `json:"reason,omitempty"`
}

// List is one list of a STATUS answer.
type List struct {
	Name   string `json:"name"`
	Length int64  `json:"length"`
	// LoadedSHA256 is the SHA-256 (hex) of the content the list was last replaced with from a
	// startup source (--load, --load-dir) or a LOAD REPLACE with SHA256; absent otherwise, and
	// for the lists of a durable server restored from its state directory.
	LoadedSHA256 string `json:"loadedSha256,omitempty"`
	// Leased is the number of lines held under leases, not counted in Length; absent when 0.
	Leased int64 `json:"leased,omitempty"`
	// Returned and DeadLettered count the lines of leases that ended unacknowledged: those that
	// went back to the list, and those that went to its dead letters (the list <name>.dead),
	// since the list was created; absent when 0.
	Returned     int64 `json:"returned,omitempty"`
	DeadLettered int64 `json:"deadLettered,omitempty"`
}

// LoadFailure is one startup load that failed, in a STATUS answer.
type LoadFailure struct {
	// List is the list the load was for; "" when a directory or the init files could not be
	// listed, so that no list was known.
	List string `json:"list"`
	// Source is where the lines were to come from: a path, DIR=REGEX, or initFileAtStartup.
	Source string `json:"source"`
	// Error says why the load failed.
	Error string `json:"error"`
}

// Reasons of a refusal (Answer.Reason), with the HTTP status they come with.
const (
	ReasonMissingParameter = "missing_parameter" // 400: a required parameter is absent
	ReasonInvalidParameter = "invalid_parameter" // 400: a parameter's value is refused (WAIT included)
	ReasonBadRequest       = "bad_request"       // 400: the request could not be parsed
	ReasonRegex            = "regex_error"       // 400: FIND's regex does not compile
	ReasonRegexTooLong     = "regex_too_long"    // 400: FIND's regex is over 16 KiB
	ReasonRegexTooCostly   = "regex_too_costly"  // 400: FIND's regex has too wide case-insensitive ranges
	ReasonRegexTimeout     = "regex_timeout"     // 400: FIND's regex ran out of time
	ReasonRegexTooComplex  = "regex_too_complex" // 400: FIND's regex ran out of backtracking stack
	ReasonIllegalName      = "illegal_name"      // 400: an INITFILE or SAVE name the protocol refuses
	ReasonNameTooLong      = "name_too_long"     // 400: an INITFILE or SAVE name too long
	ReasonFileError        = "file_error"        // 400: the name leads to no data file (a directory, ...)
	ReasonUnauthorized     = "unauthorized"      // 401: a bad or missing token
	ReasonStopDisabled     = "stop_disabled"     // 403: STOP is disabled on this server
	ReasonNotLoaded        = "not_loaded"        // 404: no such list
	ReasonEmpty            = "empty"             // 404: the list has no line
	ReasonShortList        = "short_list"        // 404: fewer lines than READMULTI asked for
	ReasonNoMatch          = "no_match"          // 404: FIND matched no line
	ReasonUnknownCommand   = "unknown_command"   // 404: no such command
	ReasonFileNotFound     = "file_not_found"    // 404: no such data file
	ReasonNoSource         = "no_source"         // 404: RELOAD's FILENAME names no list of a startup source
	ReasonDuplicate        = "duplicate"         // 409: ADD UNIQUE of a line the list has
	ReasonLeaseNotFound    = "lease_not_found"   // 404: no such lease (never given, acknowledged, or forgotten), or none holds the LINE
	ReasonLeaseEnded       = "lease_ended"       // 409: ACK or EXTEND of a lease that expired or was released: its lines went back
	ReasonRequestIDReused  = "request_id_reused" // 422: this REQUEST_ID came with another request
	ReasonTooLarge         = "too_large"         // 413: the request's body is over --max-body-bytes
	ReasonLimit            = "limit_exceeded"    // 413 for a line or list name too large, 507 for a list, the lists' count, the store or SAVE's disk reserve full
	ReasonIO               = "io_error"          // 500: the server's file system failed
	ReasonUnavailable      = "unavailable"       // 503: the server is starting or stopping, or the request was cancelled
	ReasonNotRecorded      = "not_recorded"      // 503: the journal could not record the change
	// ReasonOutcomeUnknown is a change sent to the backend (Redis) whose answer never came back
	// (a timeout, a connection cut): it may have been made. A retry with the same REQUEST_ID
	// tells; without one, the client cannot know.
	ReasonOutcomeUnknown = "outcome_unknown" // 503
	// ReasonBackendUnavailable is a store that cannot take the command (Redis down, or the
	// journal unable to write on a full disk; nothing was changed): 503, so that clients and load
	// balancers retry.
	ReasonBackendUnavailable = "backend_unavailable"
	// ReasonInvalidBody is a LOAD body sent as JSON that is not one array of strings in UTF-8:
	// 400, and nothing is loaded.
	ReasonInvalidBody = "invalid_body"
)

// UIPath is where a table server serves its web page (the operator shows it in a resource's
// status).
const UIPath = "/ui/"
