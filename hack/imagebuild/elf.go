package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// multiarch is Debian's multiarch triplet of each machine the tool packs programs for: it names
// the first library directories the dynamic loader searches.
var multiarch = map[elf.Machine]string{
	elf.EM_X86_64:  "x86_64-linux-gnu",
	elf.EM_AARCH64: "aarch64-linux-gnu",
}

// goarchMachine is the ELF machine of each GOARCH that -arch accepts with -dynamic.
var goarchMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// libraryDirs are the directories Debian's dynamic loader searches, in its order, for a library
// that DT_NEEDED names without a slash, when there is no ld.so.cache (the image has none) and no
// LD_LIBRARY_PATH: its built-in system directories.
func libraryDirs(m elf.Machine) ([]string, error) {
	triplet, ok := multiarch[m]
	if !ok {
		return nil, fmt.Errorf("ELF machine %v: no known library directories", m)
	}
	return []string{"/lib/" + triplet, "/usr/lib/" + triplet, "/lib", "/usr/lib"}, nil
}

// DynamicFiles returns what the image needs to run the ELF programs at paths (absolute, in the
// host's filesystem, which must be Debian's layout): each program at its own path, and, for
// every packed file, recursively, the ELF interpreter at the path its PT_INTERP names and each
// DT_NEEDED library in the first library directory that holds a compatible one, at that same
// path in the image. Symlinks are resolved: the image holds the files' real contents under the
// names the loader asks for. A static program comes alone. The result is sorted by path.
func DynamicFiles(machine elf.Machine, paths ...string) ([]File, error) {
	dirs, err := libraryDirs(machine)
	if err != nil {
		return nil, err
	}
	p := packer{machine: machine, dirs: dirs, files: map[string]File{}}
	for _, prog := range paths {
		if !path.IsAbs(prog) || path.Clean(prog) != prog {
			return nil, fmt.Errorf("program %q: want a clean absolute path, which is also its path in the image", prog)
		}
		if err := p.add(prog, prog, true); err != nil {
			return nil, err
		}
	}
	files := make([]File, 0, len(p.files))
	for _, f := range p.files {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

type packer struct {
	machine elf.Machine
	dirs    []string
	files   map[string]File // by path in the image
	// loaded are the sonames the loader already has: the interpreter's, which libc names too.
	loaded map[string]bool
}

// add packs the ELF file at host path src as dst, then what it needs.
func (p *packer) add(dst, src string, program bool) error {
	if _, done := p.files[dst]; done {
		return nil
	}
	data, mode, err := readReal(src)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: not an ELF file: %w", src, err)
	}
	if f.Machine != p.machine || f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("%s: ELF %v %v, want 64-bit %v", src, f.Class, f.Machine, p.machine)
	}
	if program && f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s: ELF type %v is not a program", src, f.Type)
	}
	if !program {
		mode &^= 0o111 // a library is mapped, not executed
	}
	p.files[dst] = File{Path: dst, Mode: mode, Data: data}

	interp, err := interpreter(f)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if interp != "" {
		if p.loaded == nil {
			p.loaded = map[string]bool{}
		}
		p.loaded[path.Base(interp)] = true
		// The loader itself is run, not mapped: it keeps its execute bits.
		if err := p.add(interp, interp, true); err != nil {
			return fmt.Errorf("the ELF interpreter of %s: %w", src, err)
		}
	}
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		if rp, _ := f.DynString(tag); len(rp) > 0 {
			return fmt.Errorf("%s: has %v %q, which this tool does not follow", src, tag, rp)
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: reading DT_NEEDED: %w", src, err)
	}
	for _, lib := range needed {
		if p.loaded[lib] {
			continue
		}
		if strings.Contains(lib, "/") {
			return fmt.Errorf("%s: needs %q by path, which this tool does not follow", src, lib)
		}
		found, err := p.find(lib)
		if err != nil {
			return fmt.Errorf("%s needs %s: %w", src, lib, err)
		}
		if err := p.add(found, found, false); err != nil {
			return err
		}
	}
	return nil
}

// find returns the first library directory's file named lib that is an ELF object of the
// packer's machine, skipping others as the loader does.
func (p *packer) find(lib string) (string, error) {
	for _, dir := range p.dirs {
		candidate := path.Join(dir, lib)
		f, err := elf.Open(candidate)
		if err != nil {
			continue // missing, or not ELF: the loader moves on too
		}
		ok := f.Machine == p.machine && f.Class == elf.ELFCLASS64
		f.Close()
		if ok {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("not found in %s", strings.Join(p.dirs, ", "))
}

// interpreter returns the path PT_INTERP names, or "" for a static file.
func interpreter(f *elf.File) (string, error) {
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(prog.Open())
		if err != nil {
			return "", fmt.Errorf("reading PT_INTERP: %w", err)
		}
		interp := string(bytes.TrimRight(b, "\x00"))
		if !path.IsAbs(interp) || path.Clean(interp) != interp {
			return "", fmt.Errorf("PT_INTERP %q is not a clean absolute path", interp)
		}
		return interp, nil
	}
	return "", nil
}

// readReal reads the regular file a path names after following its symlinks, and returns its
// permission bits but the group's and others' write bits.
func readReal(p string) ([]byte, int64, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, 0, err
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s (%s) is not a regular file", p, real)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, 0, err
	}
	return data, int64(info.Mode().Perm() & 0o755), nil
}
