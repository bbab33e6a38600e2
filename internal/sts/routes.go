package sts

import (
	"net/http"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// route is a command and the methods it answers to; with other methods its path is an unknown
// command, as in the original.
type route struct {
	run     func(*Server, *request) reply
	methods []string // nil: all six methods
	// list says the command names a list in FILENAME, its first parameter: dispatch checks that
	// it is there and a valid list name (checkListName), and puts it in request.list.
	list bool
	// byLease lets FILENAME be left out when LEASE names a lease, which knows its list.
	byLease bool
	// changes says the command may change data, so that a REQUEST_ID answers its retries once
	// (requestid.go).
	changes bool
}

var (
	getOrPost = []string{http.MethodGet, http.MethodPost}
	postOnly  = []string{http.MethodPost}
	getOrHead = []string{http.MethodGet, http.MethodHead}
)

var routes = map[string]route{
	protocol.CmdInitFile:  {run: (*Server).initFile, list: true, changes: true},
	protocol.CmdRead:      {run: (*Server).read, list: true, changes: true},
	protocol.CmdReadMulti: {run: (*Server).readMulti, list: true, changes: true},
	protocol.CmdAdd:       {run: (*Server).add, methods: getOrPost, list: true, changes: true},
	protocol.CmdFind:      {run: (*Server).find, methods: getOrPost, list: true, changes: true},
	protocol.CmdLength:    {run: (*Server).length, list: true},
	protocol.CmdStatus:    {run: (*Server).status},
	protocol.CmdSave:      {run: (*Server).save, list: true, changes: true},
	protocol.CmdReset:     {run: (*Server).reset, list: true, changes: true},
	protocol.CmdConfig:    {run: (*Server).config},
	protocol.CmdStop:      {run: (*Server).stopCommand},
	protocol.CmdLoad:      {run: (*Server).load, methods: postOnly, list: true, changes: true},
	protocol.CmdExport:    {run: (*Server).export, methods: getOrHead, list: true},
	protocol.CmdAck:       {run: (*Server).ack, list: true, byLease: true, changes: true},
	protocol.CmdRelease:   {run: (*Server).release, list: true, byLease: true, changes: true},
	protocol.CmdExtend:    {run: (*Server).extend, list: true, byLease: true, changes: true},
	// RELOAD's FILENAME is optional (every list when absent): reload checks it.
	protocol.CmdReload: {run: (*Server).reload, methods: getOrPost, changes: true},
}

func (rt route) allows(method string) bool {
	if rt.methods == nil {
		return true
	}
	for _, m := range rt.methods {
		if m == method {
			return true
		}
	}
	return false
}

// commandOf returns the command a request runs: HELP for the help page, the name of a route that
// answers to the request's method, or "" for an unknown command. Routing compares the whole path
// exactly, so /sts/read, /sts/READ/ and /STS/READ are unknown commands.
func commandOf(req *request) string {
	if req.path == "/sts" || req.path == protocol.CommandPrefix {
		return protocol.CmdHelp
	}
	name, isCommand := strings.CutPrefix(req.path, protocol.CommandPrefix)
	if rt, found := routes[name]; isCommand && found && rt.allows(req.method) {
		return name
	}
	return ""
}

// dispatch runs the command the request names.
func (s *Server) dispatch(req *request, command string) reply {
	switch command {
	case protocol.CmdHelp:
		return s.help()
	case "":
		return koUnknownCommand()
	}
	rt := routes[command]
	if rt.list {
		name, present := req.params["FILENAME"]
		_, leaseNamed := req.params["LEASE"]
		switch {
		case present:
			if rep := s.checkListName(command, name); rep != nil {
				return *rep
			}
			req.list = name
		case !rt.byLease || !leaseNamed:
			return koMissing(command, "FILENAME")
		}
	}
	return rt.run(s, req)
}
