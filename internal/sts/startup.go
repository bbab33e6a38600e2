package sts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
)

// LoadAtStartup loads the lists the configuration names, in this order: InitFiles (the
// original's initFileAtStartup), then LoadDirs, then Loads, so that a later source replaces an
// earlier list of the same name. Each load is logged with its line count; a failure is logged,
// kept for STATUS's JSON form (loadFailures) and skipped. Each goes through store.LoadOnce: a
// list that the store already holds from the same content (another server sharing the backend
// loaded it), or that a journal restored, is kept and that is logged, since the store holds what
// clients did with it. Afterwards /readyz answers 200. Call it once the listener is up, as the
// original does, and after restoring.
func (s *Server) LoadAtStartup(ctx context.Context) {
	defer s.phase.CompareAndSwap(phaseStarting, phaseServing)
	var failures []loadFailure
	defer func() { s.loadFailures.Store(&failures) }()
	fail := func(msg, list, source, err string) {
		s.log.Error(msg, "list", list, "source", source, "error", err)
		failures = append(failures, loadFailure{list: list, source: source, message: err})
	}
	names, err := s.initFileNames()
	if err != nil {
		fail("Could not list the init files", "", sourceInitFiles, err.Error())
	}
	for _, name := range names {
		lines, sum, rep := s.readDatasetFile(name, true)
		if rep == nil {
			loaded := s.loadOnce(ctx, name, lines, sum, filepath.Join(s.cfg.DatasetDir, name))
			rep = &loaded
		}
		if rep.fail != nil {
			fail("Could not load list", name, sourceInitFiles, rep.fail.message)
		}
	}
	for _, d := range s.cfg.LoadDirs {
		names, err := s.matchingNames(d.Dir, d.Match, true)
		if err != nil {
			fail("Could not load directory", "", d.Dir+"="+d.Match, err.Error())
			continue
		}
		for _, name := range names {
			if err := s.loadFile(ctx, name, filepath.Join(d.Dir, name)); err != nil {
				fail("Could not load list", name, filepath.Join(d.Dir, name), err.Error())
			}
		}
	}
	for _, l := range s.cfg.Loads {
		if err := s.loadFile(ctx, l.List, l.Path); err != nil {
			fail("Could not load list", l.List, l.Path, err.Error())
		}
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

// loadFile loads the file at path into the list named list.
func (s *Server) loadFile(ctx context.Context, list, path string) error {
	lines, sum, err := datafile.ReadLinesFrom(path, s.charset.read, s.cfg.Limits.MaxTotalBytes)
	if err != nil {
		return err
	}
	if rep := s.loadOnce(ctx, list, lines, sum, path); rep.fail != nil {
		return errors.New(rep.fail.message)
	}
	return nil
}

// loadOnce hands a startup source's lines to store.LoadOnce and logs what it did.
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
