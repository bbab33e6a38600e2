package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// hostMachine is the ELF machine of the host's programs, or the test is skipped.
func hostMachine(t *testing.T) elf.Machine {
	t.Helper()
	m, ok := goarchMachine[runtime.GOARCH]
	if runtime.GOOS != "linux" || !ok {
		testutil.Skip(t, "packs Linux programs of %v only, this is %s/%s", keys(goarchMachine), runtime.GOOS, runtime.GOARCH)
	}
	return m
}

// staticProgram builds the stand-in testdata/whoami without cgo: a static ELF program.
func staticProgram(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "whoami")
	build := exec.Command("go", "build", "-o", out, "./testdata/whoami")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the static stand-in: %v\n%s", err, b)
	}
	return out
}

// TestDynamicFilesRunTheProgram packs host programs and checks the layer the way the dynamic
// loader will read it: every packed ELF file's interpreter is a regular file at the path its
// PT_INTERP names, and every DT_NEEDED library is a regular file in one of the loader's library
// directories (or is the interpreter, which the loader has already); the contents are the
// host's real files; nothing is a symlink.
func TestDynamicFilesRunTheProgram(t *testing.T) {
	machine := hostMachine(t)
	static := staticProgram(t)
	for _, tc := range []struct {
		name     string
		programs []string
		want     []string // some of the files the layer must hold
		only     bool     // the layer holds the programs and nothing else
	}{
		{name: "redis-server", programs: []string{"/usr/bin/redis-server"},
			want: []string{"/usr/bin/redis-server", "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6",
				"/lib/x86_64-linux-gnu/libjemalloc.so.2", "/lib/x86_64-linux-gnu/libssl.so.3", "/lib/x86_64-linux-gnu/libsystemd.so.0",
				// needed by libsystemd, not by redis-server: the libraries are resolved recursively
				"/lib/x86_64-linux-gnu/libzstd.so.1"}},
		{name: "redis-server and redis-cli", programs: []string{"/usr/bin/redis-server", "/usr/bin/redis-cli"},
			want: []string{"/usr/bin/redis-server", "/usr/bin/redis-cli", "/lib64/ld-linux-x86-64.so.2"}},
		{name: "ls through the /bin symlink", programs: []string{"/bin/ls"}, want: []string{"/bin/ls", "/lib/x86_64-linux-gnu/libc.so.6"}},
		{name: "static program", programs: []string{static}, want: []string{static}, only: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.programs {
				if _, err := os.Stat(p); err != nil {
					testutil.Skip(t, "%s is not installed (Debian's redis-server and redis-tools)", p)
				}
			}
			if machine != elf.EM_X86_64 && strings.Contains(strings.Join(tc.want, " "), "x86_64") {
				testutil.SkipWaived(t, testutil.X86Paths, "expects x86_64 paths, this is %s", runtime.GOARCH)
			}
			files, err := DynamicFiles(machine, tc.programs...)
			if err != nil {
				t.Fatal(err)
			}
			img := testImage()
			img.Files = files
			layer, err := img.Layer()
			if err != nil {
				t.Fatal(err)
			}
			headers, contents := readTar(t, layer)
			has := func(p string) bool {
				hdr, ok := headers[strings.TrimPrefix(p, "/")]
				return ok && hdr.Typeflag == tar.TypeReg
			}
			for _, p := range tc.want {
				if !has(p) {
					t.Errorf("the layer lacks %s", p)
				}
			}
			if tc.only && len(files) != len(tc.programs) {
				t.Errorf("packed %d files, want only the %d programs", len(files), len(tc.programs))
			}
			dirs, _ := libraryDirs(machine)
			loaded := map[string]bool{} // the interpreters' names: the loader has them already
			for _, f := range files {
				ef, err := elf.NewFile(bytes.NewReader(f.Data))
				if err != nil {
					t.Fatalf("%s: %v", f.Path, err)
				}
				if interp, _ := interpreter(ef); interp != "" {
					loaded[path.Base(interp)] = true
				}
			}
			for name, hdr := range headers {
				if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeDir {
					t.Errorf("%s: tar type %q, want only regular files and directories", name, hdr.Typeflag)
				}
			}
			for _, f := range files {
				name := strings.TrimPrefix(f.Path, "/")
				real, err := filepath.EvalSymlinks(f.Path)
				if err != nil {
					t.Fatal(err)
				}
				if host, _ := os.ReadFile(real); !bytes.Equal(contents[name], host) {
					t.Errorf("%s: the layer's content is not the host's %s", f.Path, real)
				}
				if hdr := headers[name]; hdr.Uid != 0 || hdr.Mode&0o022 != 0 {
					t.Errorf("%s: owner %d mode %o, want root's, not writable by others", f.Path, hdr.Uid, hdr.Mode)
				}
				ef, err := elf.NewFile(bytes.NewReader(contents[name]))
				if err != nil {
					t.Fatalf("%s: %v", f.Path, err)
				}
				interp, err := interpreter(ef)
				if err != nil {
					t.Fatal(err)
				}
				if interp != "" && !has(interp) {
					t.Errorf("%s: its interpreter %s is not in the layer", f.Path, interp)
				}
				needed, err := ef.ImportedLibraries()
				if err != nil {
					t.Fatal(err)
				}
				for _, lib := range needed {
					found := slices.ContainsFunc(dirs, func(dir string) bool { return has(path.Join(dir, lib)) })
					if !found && !loaded[lib] {
						t.Errorf("%s needs %s, which is in none of %v in the layer", f.Path, lib, dirs)
					}
				}
			}
			for _, p := range tc.programs {
				if hdr := headers[strings.TrimPrefix(p, "/")]; hdr == nil || hdr.Mode&0o111 == 0 {
					t.Errorf("program %s is not executable in the layer: %+v", p, hdr)
				}
			}

			// The same programs in another order give the same bytes.
			reversed := slices.Clone(tc.programs)
			slices.Reverse(reversed)
			again, err := DynamicFiles(machine, reversed...)
			if err != nil {
				t.Fatal(err)
			}
			img.Files = again
			if layer2, _ := img.Layer(); !bytes.Equal(layer, layer2) {
				t.Error("packing the programs in another order changed the layer")
			}
		})
	}
}

func TestDynamicFilesRefuses(t *testing.T) {
	machine := hostMachine(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	static := staticProgram(t)
	other := elf.EM_AARCH64
	if machine == elf.EM_AARCH64 {
		other = elf.EM_X86_64
	}
	for _, tc := range []struct {
		name    string
		machine elf.Machine
		program string
	}{
		{"not ELF", machine, text},
		{"missing", machine, filepath.Join(dir, "missing")},
		{"relative path", machine, "whoami"},
		{"unclean path", machine, dir + "/../" + filepath.Base(dir) + "/script"},
		{"a directory", machine, dir},
		{"another machine", other, static},
		{"unknown machine", elf.EM_MIPS, static},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if files, err := DynamicFiles(tc.machine, tc.program); err == nil {
				t.Errorf("DynamicFiles(%v, %s) packed %d files, want an error", tc.machine, tc.program, len(files))
			}
		})
	}
}
