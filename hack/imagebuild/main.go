// Command imagebuild writes the sts-operator image as a tarball without a container engine: one
// layer holding the static binaries manager and sts, a non-root user, manager as the entrypoint.
// The tarball is both a docker-archive and an OCI image layout, as `docker save` writes since
// Docker 25: `make image` runs it; `docker load -i`, `ctr -n k8s.io images import` and `skopeo
// copy oci-archive:<file>:<tag>` read its output.
//
// With -program it packs one other static binary the same way, as the image's entrypoint: the
// local cluster's pause image and the end-to-end load generator (hack/cluster).
//
// With -dynamic it packs a dynamically linked program of the host (Debian's layout) at its own
// path, as the entrypoint, with what the dynamic loader needs to run it: the ELF interpreter and
// the shared libraries it needs, recursively, at the paths the loader looks for them, as real
// files (DynamicFiles). Each -also adds another such program, say a client for probes and
// `kubectl exec`. The local cluster's Redis image is /usr/bin/redis-server with
// /usr/bin/redis-cli. -list prints what would be packed instead of writing the image: one
// "sha256 path" line per file, whose hash build.sh puts in the tag.
//
// The output depends only on the inputs: every mtime is the creation time, which is
// SOURCE_DATE_EPOCH when set (the reproducible-builds convention) and the Unix epoch otherwise.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	var (
		out     = fs.String("o", "", "output tarball `path` (required)")
		tag     = fs.String("tag", "", "image `repository:tag` (required)")
		version = fs.String("version", "dev", "version recorded in the image labels")
		manager = fs.String("manager", "bin/manager", "`path` of the static manager binary")
		sts     = fs.String("sts", "bin/sts", "`path` of the static sts binary")
		arch    = fs.String("arch", runtime.GOARCH, "GOARCH the binaries were built for")
		program = fs.String("program", "", "`path` of one static binary to pack instead of manager and sts; the image runs it as /<its file name>")
		dynamic = fs.String("dynamic", "", "absolute `path` of a dynamically linked program to pack, with its interpreter and libraries, instead of manager and sts; the image runs it at that path")
		list    = fs.Bool("list", false, "with -dynamic, print the files that would be packed (sha256 and path) instead of writing an image")
		also    []string
	)
	fs.Func("also", "absolute `path` of another dynamically linked program to pack with -dynamic (repeatable)", func(p string) error {
		also = append(also, p)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *dynamic != "" && *program != "" {
		return errors.New("-program and -dynamic exclude each other")
	}
	if *dynamic == "" && (len(also) > 0 || *list) {
		return errors.New("-also and -list need -dynamic")
	}
	if *list {
		files, err := dynamicFiles(*arch, *dynamic, also)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintf(stdout, "%s  %s\n", sha256Hex(f.Data), f.Path)
		}
		return nil
	}
	if *out == "" || *tag == "" {
		return errors.New("-o and -tag are required")
	}
	created, err := creationTime(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	img := Image{
		Tag:        *tag,
		Arch:       *arch,
		Entrypoint: []string{"/manager"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "sts-operator",
			"org.opencontainers.image.version": *version,
			"org.opencontainers.image.source":  "https://github.com/sts-operator/sts-operator",
			"org.opencontainers.image.description": "Kubernetes operator and server for the JMeter " +
				"HTTP Simple Table Server protocol (entrypoint /manager; the table server is /sts)",
		},
		Created: created,
	}
	if *dynamic != "" {
		if img.Files, err = dynamicFiles(*arch, *dynamic, also); err != nil {
			return err
		}
		img.Entrypoint = []string{*dynamic}
		img.Labels["org.opencontainers.image.title"] = filepath.Base(*dynamic)
		img.Labels["org.opencontainers.image.description"] = "the host's " + strings.Join(append([]string{*dynamic}, also...), " and ") +
			" with the shared libraries they need, packed by sts-operator's hack/imagebuild for test clusters"
		return write(stdout, *out, img)
	}
	type binary struct{ path, src string }
	binaries := []binary{{"/manager", *manager}, {"/sts", *sts}}
	if *program != "" {
		name := "/" + filepath.Base(*program)
		binaries = []binary{{name, *program}}
		img.Entrypoint = []string{name}
		img.Labels["org.opencontainers.image.title"] = filepath.Base(*program)
		img.Labels["org.opencontainers.image.description"] = "sts-operator helper program " + name
	}
	for _, bin := range binaries {
		data, err := os.ReadFile(bin.src)
		if err != nil {
			return fmt.Errorf("reading the %s binary: %w", bin.path, err)
		}
		img.Files = append(img.Files, File{Path: bin.path, Mode: 0o755, Data: data})
	}
	return write(stdout, *out, img)
}

func write(stdout io.Writer, out string, img Image) error {
	written, err := writeFile(out, img)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "image %s id %s layer %s\n", img.Tag, written.ConfigDigest, written.DiffID)
	return nil
}

// dynamicFiles is DynamicFiles for -dynamic and -also, built for GOARCH arch.
func dynamicFiles(arch, program string, also []string) ([]File, error) {
	machine, ok := goarchMachine[arch]
	if !ok {
		return nil, fmt.Errorf("-arch %s: -dynamic packs programs for %v only", arch, keys(goarchMachine))
	}
	return DynamicFiles(machine, append([]string{program}, also...)...)
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// creationTime parses SOURCE_DATE_EPOCH (seconds since the epoch); empty means the epoch.
func creationTime(epoch string) (time.Time, error) {
	if epoch == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want a non-negative number of seconds", epoch)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// writeFile writes the archive next to path and renames it into place, so an interrupted build
// never leaves a truncated tarball that a later import would choke on.
func writeFile(path string, img Image) (Written, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Written{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".imagebuild-*")
	if err != nil {
		return Written{}, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	bw := bufio.NewWriter(tmp)
	written, err := img.WriteArchive(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return Written{}, fmt.Errorf("writing %s: %w", path, err)
	}
	return written, nil
}
