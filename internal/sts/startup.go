package sts

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/form"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
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
// store.LoadOnce, so that of servers starting together one loads it, whatever their files hold:
// the others keep it, and say so in their log, with a warning when their file differs.
func (s *Server) LoadAtStartup(ctx context.Context) {
	defer s.phase.CompareAndSwap(phaseStarting, phaseServing)
	var failures []loadFailure
	defer func() { s.loadFailures.Store(&failures) }()
	fail := func(msg, list, source string, rep reply) {
		s.log.Error(msg, "list", list, "source", source, "error", rep.fail.message)
		failures = append(failures, loadFailure{list: list, source: source, message: rep.fail.message})
	}
	mine := map[string]bool{} // the lists this startup loaded: a later source replaces them
	for _, src := range s.startupSources(fail) {
		// A file name the protocol would refuse as a list name (too long, a control character)
		// is not loaded: clients could not address the list, and STATUS would show it.
		if rep := s.checkListName(protocol.CmdLoad, src.list); rep != nil {
			fail("Could not load list", src.list, src.origin, *rep)
			continue
		}
		// A list the store held before is kept: its file is not even read.
		if !mine[src.list] {
			n, err := s.store.Length(ctx, src.list)
			switch {
			case err == nil:
				s.log.Info("Kept the list the store holds instead of loading it", "list", src.list, "lines", n, "source", src.path)
				continue
			case !errors.Is(err, store.ErrNotLoaded):
				fail("Could not load list", src.list, src.origin, storeFailure(protocol.CmdInitFile, src.list, err))
				continue
			}
		}
		lines, sum, rep := src.read()
		loaded := false
		if rep == nil {
			loaded, rep = s.loadOnce(ctx, src.list, lines, sum, src.path, mine[src.list])
		}
		if rep != nil {
			fail("Could not load list", src.list, src.origin, *rep)
			continue
		}
		mine[src.list] = mine[src.list] || loaded
	}
}

// startupSource is one source of a list that the configuration names: an init file, a file of a
// load directory, or a --load file.
type startupSource struct {
	list   string
	path   string // for the log
	origin string // for STATUS's loadFailures: the path, or initFileAtStartup
	// read returns the source's lines and their SHA-256 (hex), or why it could not be read.
	read func() ([]string, string, *reply)
}

// startupSources returns the sources of the configuration in load order: InitFiles (the
// original's initFileAtStartup), then LoadDirs, then Loads. The init files or a directory that
// cannot be listed go to fail instead. LoadAtStartup and RELOAD (cmd_reload.go) load the same
// sources.
func (s *Server) startupSources(fail func(msg, list, source string, rep reply)) []startupSource {
	var sources []startupSource
	names, err := s.initFileNames()
	if err != nil {
		fail("Could not list the init files", "", sourceInitFiles, fileFailure(protocol.CmdReload, err))
	}
	for _, name := range names {
		sources = append(sources, startupSource{list: name, path: filepath.Join(s.cfg.DatasetDir, name), origin: sourceInitFiles,
			read: func() ([]string, string, *reply) { return s.readDatasetFile(name, true) }})
	}
	for _, d := range s.cfg.LoadDirs {
		names, err := s.matchingNames(d.Dir, d.Match, true)
		if err != nil {
			fail("Could not load directory", "", d.Dir+"="+d.Match, fileFailure(protocol.CmdReload, err))
			continue
		}
		for _, name := range names {
			path := filepath.Join(d.Dir, name)
			sources = append(sources, startupSource{list: name, path: path, origin: path, read: s.readFile(path)})
		}
	}
	for _, l := range s.cfg.Loads {
		sources = append(sources, startupSource{list: l.List, path: l.Path, origin: l.Path, read: s.readFile(l.Path)})
	}
	return sources
}

// sourceInitFiles names the original's initFileAtStartup as the source of a load.
const sourceInitFiles = "initFileAtStartup"

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
	if form.JavaTrim(s.cfg.InitFiles) == "" {
		return nil, nil
	}
	if !s.cfg.InitFilesRegex {
		names := strings.Split(s.cfg.InitFiles, ",")
		for i := range names {
			names[i] = form.JavaTrim(names[i])
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
// why it could not be read (the file's error as it is, which names the path).
func (s *Server) readFile(path string) func() ([]string, string, *reply) {
	return func() ([]string, string, *reply) {
		lines, sum, err := datafile.ReadLinesFrom(path, s.charset.read, s.cfg.Limits.MaxTotalBytes)
		var tooLarge *datafile.TooLargeError
		var rep reply
		switch {
		case err == nil:
			return lines, sum, nil
		case errors.Is(err, datafile.ErrFileNotFound):
			rep = ko(protocol.CmdReload, http.StatusNotFound, protocol.ReasonFileNotFound, err.Error())
		case errors.As(err, &tooLarge):
			rep = ko(protocol.CmdReload, http.StatusInsufficientStorage, protocol.ReasonLimit, err.Error())
		default:
			rep = fileFailure(protocol.CmdReload, err)
		}
		return nil, "", &rep
	}
}

// loadOnce hands a startup source's lines to store.LoadOnce, or to store.Replace when this
// startup loaded the list from an earlier source (again), and logs what it did: it keeps the list
// when another server starting at the same time loaded it first. It returns whether it loaded, or
// the failure.
func (s *Server) loadOnce(ctx context.Context, list string, lines []string, sum, source string, again bool) (bool, *reply) {
	var err error
	loaded, held := true, sum
	if again {
		err = s.store.Replace(ctx, list, lines, sum)
	} else {
		loaded, held, err = s.store.LoadOnce(ctx, list, lines, sum)
	}
	if err != nil {
		rep := storeFailure(protocol.CmdInitFile, list, err)
		return false, &rep
	}
	if !loaded {
		n, _ := s.store.Length(ctx, list)
		if held != sum {
			s.log.Warn("Kept the list another server loaded first, from another content than this server's file", "list", list, "lines", n, "source", source, "digest", held, "file_digest", sum)
		} else {
			s.log.Info("Kept the list the store holds instead of loading it", "list", list, "lines", n, "source", source)
		}
		return false, nil
	}
	s.log.Info("Loaded list", "list", list, "lines", len(lines), "source", source)
	return true, nil
}
