// Package metrics is the table server's Prometheus instrumentation: what the lists hold, the
// commands served, the journal's fsyncs, on a registry of its own with the Go and process
// collectors.
//
//	sts_commands_total{command,result}         commands answered; result is OK or KO
//	sts_command_duration_seconds{command}      time to answer, a WAIT included
//	sts_list_lines{list}                       lines of each list, for the first lists by name
//	sts_other_lists, sts_other_lists_lines     the lists beyond that cap, and their lines
//	sts_list_leased_lines{list}                lines held under leases, and lines of leases that
//	sts_list_returned_lines_total{list}        ended unacknowledged: given back to the list, or
//	sts_list_dead_lettered_lines_total{list}   to its dead letters; for the same lists as
//	                                           sts_list_lines, once a list has had a lease
//	sts_other_lists_leased_lines, ..._returned_lines_total, ..._dead_lettered_lines_total
//	                                           the same for the lists beyond the cap
//	sts_lists, sts_lines, sts_line_bytes       all lists, their lines, the memory they hold
//	sts_waiting_reads                          reads waiting for lines (WAIT)
//	sts_journal_fsync_duration_seconds         fsyncs of the journal
//	sts_journal_bytes                          bytes of journal and snapshot on disk
//	sts_backend_up{backend}                    1 when the store's backend answers (memory: always)
//	sts_backend_request_duration_seconds{result}  requests to a shared backend (Redis), OK or error
//	sts_backend_dials_total{result}            connections to it opened: each one after the first
//	                                           few is a reconnection
//	sts_build_info{version,revision,goversion} always 1: the build that runs (the operator too)
//
// Command names are the protocol's, with UNKNOWN for any other path, so that no label takes an
// unbounded number of values; list names are capped by their number.
package metrics
