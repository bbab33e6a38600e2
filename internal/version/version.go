// Package version holds the build version stamped into both binaries by the Makefile.
package version

// Version is set at link time with -X; "dev" for plain go builds.
var Version = "dev"
