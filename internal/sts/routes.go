package sts

import (
	"net/http"
	"strings"
)

// commandPrefix starts every command path: /sts/<COMMAND>.
const commandPrefix = "/sts/"

// Command names, as they appear in the path and in the JSON form's "command".
const (
	cmdInitFile  = "INITFILE"
	cmdRead      = "READ"
	cmdReadMulti = "READMULTI"
	cmdAdd       = "ADD"
	cmdFind      = "FIND"
	cmdLength    = "LENGTH"
	cmdStatus    = "STATUS"
	cmdSave      = "SAVE"
	cmdReset     = "RESET"
	cmdConfig    = "CONFIG"
	cmdStop      = "STOP"
	cmdHelp      = "HELP"
	cmdLoad      = "LOAD"
	cmdExport    = "EXPORT"
)

// route is a command and the methods it answers to; with other methods its path is an unknown
// command, as in the original.
type route struct {
	run     func(*Server, *request) reply
	methods []string // nil: all six methods
	// list says the command names a list in FILENAME, its first parameter: dispatch checks that
	// it is there and a valid list name (checkListName), and puts it in request.list.
	list bool
}

var (
	getOrPost = []string{http.MethodGet, http.MethodPost}
	postOnly  = []string{http.MethodPost}
	getOrHead = []string{http.MethodGet, http.MethodHead}
)

var routes = map[string]route{
	cmdInitFile:  {run: (*Server).initFile, list: true},
	cmdRead:      {run: (*Server).read, list: true},
	cmdReadMulti: {run: (*Server).readMulti, list: true},
	cmdAdd:       {run: (*Server).add, methods: getOrPost, list: true},
	cmdFind:      {run: (*Server).find, methods: getOrPost, list: true},
	cmdLength:    {run: (*Server).length, list: true},
	cmdStatus:    {run: (*Server).status},
	cmdSave:      {run: (*Server).save, list: true},
	cmdReset:     {run: (*Server).reset, list: true},
	cmdConfig:    {run: (*Server).config},
	cmdStop:      {run: (*Server).stopCommand},
	cmdLoad:      {run: (*Server).load, methods: postOnly, list: true},
	cmdExport:    {run: (*Server).export, methods: getOrHead, list: true},
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
	if req.path == "/sts" || req.path == commandPrefix {
		return cmdHelp
	}
	name, isCommand := strings.CutPrefix(req.path, commandPrefix)
	if rt, found := routes[name]; isCommand && found && rt.allows(req.method) {
		return name
	}
	return ""
}

// dispatch runs the command the request names.
func (s *Server) dispatch(req *request, command string) reply {
	switch command {
	case cmdHelp:
		return s.help()
	case "":
		return koUnknownCommand()
	}
	rt := routes[command]
	if rt.list {
		name, present := req.params["FILENAME"]
		if !present {
			return koMissing(command, "FILENAME")
		}
		if rep := s.checkListName(command, name); rep != nil {
			return *rep
		}
		req.list = name
	}
	return rt.run(s, req)
}
