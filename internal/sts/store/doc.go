// Package store is the contract between the table server's protocol and the engines that hold
// its lists: named, ordered lists of lines with the original STS semantics (READ and FIND with
// KEEP move a line to the end, keys are never deleted).
//
// Two backends implement Store: memory (the default, in this process, with an optional journal)
// and redis (Redis or Valkey, shared by any number of table servers). storetest is the
// conformance suite both pass. The protocol layer maps the errors defined here, one answer per
// error, and never looks behind the interface.
package store
