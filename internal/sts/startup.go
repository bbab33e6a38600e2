package sts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// LoadAtStartup loads the lists the configuration names, in this order: InitFiles (the
// original's initFileAtStartup), then LoadDirs, then Loads. Each load is logged with its line
// count; a failure is logged, kept for STATUS's JSON form (loadFailures) and skipped. Afterwards
// /readyz answers 200. Call it once the listener is up, as the original does, and after
// restoring.
//
// A startup source never replaces a list that the store held before this startup loaded it: one
// a journal restored, or one a shared backend (Redis) holds because another server, or this one
// before it was restarted, loaded or created it, whatever its content and the file's, since the
// store holds what clients did with it. The list is kept as it is and that is logged; INITFILE
// and LOAD MODE=REPLACE are how a client replaces it. Among this server's own sources, a later
// one replaces an earlier list of the same name. A list absent from the store goes through
// store.LoadOnce, so that servers starting together on the same content load it once.
func (s *Server) LoadAtStartup(ctx context.Context) {
	defer s.phase.CompareAndSwap(phaseStarting, phaseServing)
	var failures []loadFailure
	defer func() { s.loadFailures.Store(&failures) }()
	fail := func(msg, list, source, err string) {
		s.log.Error(msg, "list", list, "source", source, "error", err)
		failures = append(failures, loadFailure{list: list, source: source, message: err})
	}
	mine := map[string]bool{} // the lists this startup loaded: a later source replaces them
	// load reads a source (path, for the log; failSource, for STATUS) with read and loads it
	// into list, unless the store held the list before: then read is not even called.
	load := func(list, path, failSource string, read func() ([]string, string, string)) {
		// A file name the protocol would refuse as a list name (too long, a control character)
		// is not loaded: clients could not address the list, and STATUS would show it.
		if rep := s.checkListName(cmdLoad, list); rep != nil {
			fail("Could not load list", list, failSource, rep.fail.message)
			return
		}
		if !mine[list] {
			n, err := s.store.Length(ctx, list)
			switch {
			case err == nil:
				s.log.Info("Kept the list the store holds instead of loading it", "list", list, "lines", n, "source", path)
				return
			case !errors.Is(err, store.ErrNotLoaded):
				fail("Could not load list", list, failSource, storeFailure(cmdInitFile, list, err).fail.message)
				return
			}
		}
		lines, sum, failure := read()
		if failure == "" {
			if rep := s.loadOnce(ctx, list, lines, sum, path); rep.fail != nil {
				failure = rep.fail.message
			}
		}
		if failure != "" {
			fail("Could not load list", list, failSource, failure)
			return
		}
		mine[list] = true
	}
	names, err := s.initFileNames()
	if err != nil {
		fail("Could not list the init files", "", sourceInitFiles, err.Error())
	}
	for _, name := range names {
		load(name, filepath.Join(s.cfg.DatasetDir, name), sourceInitFiles, func() ([]string, string, string) {
			lines, sum, rep := s.readDatasetFile(name, true)
			if rep != nil {
				return nil, "", rep.fail.message
			}
			return lines, sum, ""
		})
	}
	for _, d := range s.cfg.LoadDirs {
		names, err := s.matchingNames(d.Dir, d.Match, true)
		if err != nil {
			fail("Could not load directory", "", d.Dir+"="+d.Match, err.Error())
			continue
		}
		for _, name := range names {
			path := filepath.Join(d.Dir, name)
			load(name, path, path, s.readFile(path))
		}
	}
	for _, l := range s.cfg.Loads {
		load(l.List, l.Path, l.Path, s.readFile(l.Path))
	}
}

// sourceInitFiles names the original's initFileAtStartup as the source of a load.
const sourceInitFiles = "initFileAtStartup"

// loadFailure is a startup load that failed: the list it was for ("" when a directory or the
// init files could not even be listed), where it came from, and why.
type loadFailure struct{ list, source, message string }

// startupFailures returns the startup loads that failed; nil before LoadAtStartup has finished.
func (s *Server) startupFailures() []loadFailure {
	if f := s.loadFailures.Load(); f != nil {
		return *f
	}
	return nil
}

// initFileNames returns the files of initFileAtStartup: the comma list split on ',' with empty
// tokens kept and each token trimmed, or in regex mode the names in the dataset directory that
// fully match, sorted by name (the original takes the directory's unspecified order). Unlike the
// original, which sends each name unencoded in an HTTP request, names are taken literally: '+'
// and '%' are not decoded and a space does not cut the name.
func (s *Server) initFileNames() ([]string, error) {
	if javaTrim(s.cfg.InitFiles) == "" {
		return nil, nil
	}
	if !s.cfg.InitFilesRegex {
		names := strings.Split(s.cfg.InitFiles, ",")
		for i := range names {
			names[i] = javaTrim(names[i])
		}
		return names, nil
	}
	return s.matchingNames(s.cfg.DatasetDir, s.cfg.InitFiles, false)
}

// matchingNames lists the entries of dir, sorted by name, whose name fully matches the Java
// regular expression pattern; with regularOnly, only regular files (symbolic links followed, so
// that the files of a mounted ConfigMap count and its ..data directory does not).
func (s *Server) matchingNames(dir, pattern string, regularOnly bool) ([]string, error) {
	re, err := javaregex.Compile(pattern, s.cfg.RegexTimeout)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		matched, err := re.Match(e.Name())
		if err != nil {
			s.log.Error("Could not match a file name", "dir", dir, "file", e.Name(), "regex", pattern, "error", err)
			continue
		}
		if !matched {
			continue
		}
		if regularOnly {
			if info, err := os.Stat(filepath.Join(dir, e.Name())); err != nil || !info.Mode().IsRegular() {
				continue
			}
		}
		names = append(names, e.Name())
	}
	return names, nil
}

// readFile returns the reader of a startup file at path (anywhere): its lines, their digest, or
// why it could not be read.
func (s *Server) readFile(path string) func() ([]string, string, string) {
	return func() ([]string, string, string) {
		lines, sum, err := datafile.ReadLinesFrom(path, s.charset.read, s.cfg.Limits.MaxTotalBytes)
		if err != nil {
			return nil, "", err.Error()
		}
		return lines, sum, ""
	}
}

// loadOnce hands a startup source's lines to store.LoadOnce and logs what it did: it keeps the
// list when another server starting at the same time loaded the same content first.
func (s *Server) loadOnce(ctx context.Context, list string, lines []string, sum, source string) reply {
	loaded, err := s.store.LoadOnce(ctx, list, lines, sum)
	if err != nil {
		return storeFailure(cmdInitFile, list, err)
	}
	if !loaded {
		n, _ := s.store.Length(ctx, list)
		s.log.Info("Kept the list the store holds instead of loading it", "list", list, "lines", n, "source", source)
		return okReply(cmdInitFile)
	}
	s.log.Info("Loaded list", "list", list, "lines", len(lines), "source", source)
	return okReply(cmdInitFile)
}
