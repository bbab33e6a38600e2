package sts

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// reload is the extension RELOAD: every startup source (initFileAtStartup, --load-dir files,
// --load) is read again and replaces its list, whatever the list holds now, so that the lists
// are back to what their sources hold while the server keeps serving: a reset between two test
// runs. With FILENAME, only the sources of that list. The server reads the files itself, so that
// a file on a volume of its own reloads as well as a mounted ConfigMap.
//
// Each list is replaced in one change (store.Replace, recording the source's digest as a startup
// load does): a read sees the list before or after, never half of it. Sources of one list are
// read as at startup, the last one giving the list its lines. A source that fails (a file gone)
// leaves its list as it is, and the other lists are reloaded all the same: the answer is then a
// KO naming each failure, whose JSON form also lists what was reloaded.
//
// Leases running on a list are left to run (the store cannot end a list's leases): a line held
// under one when the list is reloaded is in the reloaded list too, and comes back to it a second
// time if the lease expires or is released (an ACK consumes it, as it would have). The answer
// gives each list's leased lines, so that the caller can tell.
func (s *Server) reload(req *request) reply {
	name, one := req.params["FILENAME"]
	if one {
		if rep := s.checkListName(cmdReload, name); rep != nil {
			return *rep
		}
	}
	var failed []loadFailure
	var first *failure
	fail := func(msg, list, source string, rep reply) {
		s.log.Error(msg, "list", list, "source", source, "error", rep.fail.message)
		failed = append(failed, loadFailure{list: list, source: source, message: rep.fail.message})
		if first == nil {
			first = rep.fail
		}
	}
	sources := s.startupSources(fail)
	last := make(map[string]int, len(sources)) // the source that gives each list its lines
	for i, src := range sources {
		last[src.list] = i
	}
	if _, found := last[name]; one && found {
		failed, first = nil, nil // a directory that could not be listed holds none of the list's sources
	} else if one && first == nil {
		return ko(cmdReload, http.StatusNotFound, protocol.ReasonNoSource, name+" has no startup source !")
	}
	var reloaded []store.ListInfo
	for i, src := range sources {
		if last[src.list] != i || one && src.list != name {
			continue
		}
		if rep := s.checkListName(cmdReload, src.list); rep != nil {
			fail("Could not reload list", src.list, src.origin, *rep)
			continue
		}
		lines, sum, rep := src.read()
		if rep == nil {
			if err := s.store.Replace(req.ctx, src.list, lines, sum); err != nil {
				failure := storeFailure(cmdReload, src.list, err)
				rep = &failure
			}
		}
		if rep != nil {
			fail("Could not reload list", src.list, src.origin, *rep)
			continue
		}
		s.log.Info("Reloaded list", "list", src.list, "lines", len(lines), "source", src.path)
		reloaded = append(reloaded, store.ListInfo{Name: src.list, Length: len(lines), Digest: sum})
	}
	s.addLeased(req, reloaded)
	slices.SortFunc(reloaded, func(a, b store.ListInfo) int { return strings.Compare(a.Name, b.Name) })
	rep := reply{command: cmdReload, layout: layoutReload, lists: reloaded, failed: failed}
	if first != nil {
		rep.fail = &failure{message: reloadFailureMessage(failed), reason: first.reason, status: first.status}
	}
	return rep
}

// addLeased fills in the lines that leases held in each reloaded list, as the store has them
// after the reload. They are the answer's warning, not its substance: a store that cannot say
// leaves them 0.
func (s *Server) addLeased(req *request, reloaded []store.ListInfo) {
	if len(reloaded) == 0 {
		return
	}
	infos, err := s.store.Lists(req.ctx)
	if err != nil {
		return
	}
	leased := make(map[string]int, len(infos))
	for _, info := range infos {
		leased[info.Name] = info.Leased
	}
	for i := range reloaded {
		reloaded[i].Leased = leased[reloaded[i].Name]
	}
}

// reloadFailureMessage is RELOAD's KO: each source that failed and why.
func reloadFailureMessage(failed []loadFailure) string {
	parts := make([]string, len(failed))
	for i, f := range failed {
		parts[i] = fmt.Sprintf("%s (%s): %s", f.list, f.source, f.message)
		if f.list == "" {
			parts[i] = fmt.Sprintf("%s: %s", f.source, f.message)
		}
	}
	return "Could not reload " + strings.Join(parts, "; ")
}
