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
// The leases running on a list end in the same step (store.Reload), as if acknowledged: a line
// held under one is in the reloaded list already, and must not come back to it a second time when
// the lease expires or is released; an ACK of it then answers an unknown lease. The answer gives,
// as each list's leased lines, those whose leases the reload ended. With a REQUEST_ID, a retry
// reloads none of the lists the first reloaded (store/request.go): it would undo what clients did
// with them since.
func (s *Server) reload(req *request) reply {
	name, one := req.params["FILENAME"]
	if one {
		if rep := s.checkListName(protocol.CmdReload, name); rep != nil {
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
		return ko(protocol.CmdReload, http.StatusNotFound, protocol.ReasonNoSource, name+" has no startup source !")
	}
	var reloaded []store.ListInfo
	for i, src := range sources {
		if last[src.list] != i || one && src.list != name {
			continue
		}
		if rep := s.checkListName(protocol.CmdReload, src.list); rep != nil {
			fail("Could not reload list", src.list, src.origin, *rep)
			continue
		}
		lines, sum, rep := src.read()
		ended := 0
		if rep == nil {
			var err error
			ctx := req.ctx
			if r, ok := store.RequestFrom(ctx); ok {
				ctx = store.WithRequest(ctx, r.ForList(src.list))
			}
			if ended, err = s.store.Reload(ctx, src.list, lines, sum); err != nil {
				failure := storeFailure(protocol.CmdReload, src.list, err)
				rep = &failure
			}
		}
		if rep != nil {
			fail("Could not reload list", src.list, src.origin, *rep)
			continue
		}
		s.log.Info("Reloaded list", "list", src.list, "lines", len(lines), "source", src.path)
		reloaded = append(reloaded, store.ListInfo{Name: src.list, Length: len(lines), Digest: sum, Leased: ended})
	}
	slices.SortFunc(reloaded, func(a, b store.ListInfo) int { return strings.Compare(a.Name, b.Name) })
	rep := reply{command: protocol.CmdReload, layout: layoutReload, lists: reloaded, failed: failed}
	if first != nil {
		rep.fail = &failure{message: reloadFailureMessage(failed), reason: first.reason, status: first.status}
	}
	return rep
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
