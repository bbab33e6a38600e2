//go:build !race

package stsproc

// Race is whether this binary was built with the race detector (go test -race): Build then
// builds the sts binary with it too.
const Race = false
