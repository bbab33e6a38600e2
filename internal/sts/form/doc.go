// Package form decodes what a request carries as the original table server reads it: a
// percent-encoded target or query (DecodePercent, ParseQuery: Java's URLDecoder after NanoHTTPD's
// splitting), a POST body, url-encoded or multipart/form-data (ParseBody, and ParseBodyPrefix for
// the first part of a body read to find a token), and the few Java rules a plan can observe in a
// parameter (ParseJavaInt, JavaBoolean, JavaTrim). It is pure: no HTTP, no server, no lock; the
// values it returns never share a body's memory, so that a list keeping a value does not keep the
// request it came in. Its tests hold it to the decoder it replaced (reference_test.go), value for
// value and error for error (FuzzFormDecoding), and bound what decoding allocates
// (TestAdversarialFormDecodingMemory).
package form
