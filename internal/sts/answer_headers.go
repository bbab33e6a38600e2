package sts

import "net/http"

// Headers every answer carries, shared read-only slices so that the hot path allocates less.
var (
	cacheControl = []string{"no-cache, no-store, must-revalidate"}
	pragma       = []string{"no-cache"}
	expires      = []string{"0"}
	jsonType     = []string{"application/json"}
	// contentSecurity forbids a browser to run or load anything from an answer, which is data,
	// never a page to run: a line holding <script> stays text.
	contentSecurity = []string{"default-src 'none'; sandbox"}
	noSniff         = []string{"nosniff"}
)

// setNoCache sets the original's headers that forbid caching: every answer is of its moment, and
// a READ answered from a cache would hand out a line again.
func setNoCache(h http.Header) {
	h["Cache-Control"] = cacheControl
	h["Pragma"] = pragma
	h["Expires"] = expires
}
