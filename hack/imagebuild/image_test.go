package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// readTar returns the members of a tar by name, failing the test on a malformed archive.
func readTar(t *testing.T, data []byte) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	headers := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, contents
		}
		if err != nil {
			t.Fatalf("reading tar: %v", err)
		}
		if _, dup := headers[hdr.Name]; dup {
			t.Fatalf("duplicate tar member %q", hdr.Name)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", hdr.Name, err)
		}
		headers[hdr.Name] = hdr
		contents[hdr.Name] = body
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func testImage() Image {
	return Image{
		Tag:        "sts-operator:v1.2.3",
		Arch:       "amd64",
		Entrypoint: []string{"/manager"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels:     map[string]string{"org.opencontainers.image.version": "v1.2.3"},
		Created:    time.Unix(1700000000, 0).UTC(),
		Files: []File{
			{Path: "/manager", Mode: 0o755, Data: []byte("manager binary")},
			{Path: "/sts", Mode: 0o755, Data: []byte("sts binary, a little longer")},
		},
	}
}

// readImageFile reads the image tarball at path: its files, its one manifest entry and its config.
func readImageFile(t *testing.T, path string) (map[string][]byte, manifestEntry, config) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, files := readTar(t, data)
	var manifest []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %d entries, %v", len(manifest), err)
	}
	var cfg config
	if err := json.Unmarshal(files[manifest[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	return files, manifest[0], cfg
}

// TestArchiveIsLoadable reads the archive the way docker load and containerd do: manifest.json
// names the config and the layer by path, the config's diff_ids are the sha256 of the
// uncompressed layers, and blob names are their own digests.
func TestArchiveIsLoadable(t *testing.T) {
	img := testImage()
	var buf bytes.Buffer
	written, err := img.WriteArchive(&buf)
	if err != nil {
		t.Fatal(err)
	}
	_, files := readTar(t, buf.Bytes())

	var manifest []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest = %+v, want one image with one layer", manifest)
	}
	m := manifest[0]
	if len(m.RepoTags) != 1 || m.RepoTags[0] != img.Tag {
		t.Errorf("RepoTags = %v, want [%s]", m.RepoTags, img.Tag)
	}
	cfgBytes, ok := files[m.Config]
	if !ok {
		t.Fatalf("config %q named by manifest.json is not in the archive", m.Config)
	}
	layer, ok := files[m.Layers[0]]
	if !ok {
		t.Fatalf("layer %q named by manifest.json is not in the archive", m.Layers[0])
	}
	if want := "blobs/sha256/" + strings.TrimPrefix(digest(cfgBytes), "sha256:"); m.Config != want {
		t.Errorf("config stored as %s, want its digest name %s", m.Config, want)
	}
	if written.ConfigDigest != digest(cfgBytes) || written.DiffID != digest(layer) {
		t.Errorf("WriteArchive reported %+v, archive has config %s layer %s", written, digest(cfgBytes), digest(layer))
	}

	var cfg config
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	if got := cfg.RootFS.DiffIDs; len(got) != 1 || got[0] != digest(layer) {
		t.Errorf("diff_ids = %v, want [%s]", got, digest(layer))
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform = %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/manager" {
		t.Errorf("Entrypoint = %v, want [/manager]", got)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("User = %q, want the non-root 65532:65532", cfg.Config.User)
	}
	if cfg.Config.WorkingDir != "/" {
		t.Errorf("WorkingDir = %q, want /", cfg.Config.WorkingDir)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" {
		t.Errorf("Labels = %v, want the version label", cfg.Config.Labels)
	}
	if !cfg.Created.Equal(img.Created) {
		t.Errorf("created = %v, want %v", cfg.Created, img.Created)
	}
}

func TestLayerContents(t *testing.T) {
	img := testImage()
	layer, err := img.Layer()
	if err != nil {
		t.Fatal(err)
	}
	headers, files := readTar(t, layer)

	for _, f := range img.Files {
		name := strings.TrimPrefix(f.Path, "/")
		hdr, ok := headers[name]
		if !ok {
			t.Errorf("layer lacks %s", f.Path)
			continue
		}
		if !bytes.Equal(files[name], f.Data) {
			t.Errorf("%s content = %q, want %q", f.Path, files[name], f.Data)
		}
		if hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s mode %o owner %d:%d, want 755 owned by root (not writable by the image user)", f.Path, hdr.Mode, hdr.Uid, hdr.Gid)
		}
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("etc/passwd lacks the nonroot user:\n%s", files["etc/passwd"])
	}
	if !strings.Contains(string(files["etc/group"]), "nonroot:x:65532:") {
		t.Errorf("etc/group lacks the nonroot group:\n%s", files["etc/group"])
	}
	if hdr := headers["tmp/"]; hdr == nil || hdr.Typeflag != tar.TypeDir || hdr.Mode != 0o1777 {
		t.Errorf("tmp/ = %+v, want a directory with mode 1777", hdr)
	}
	if hdr := headers["home/nonroot/"]; hdr == nil || hdr.Uid != NonRootID {
		t.Errorf("home/nonroot/ = %+v, want a directory owned by %d", hdr, NonRootID)
	}
	for name, hdr := range headers {
		if !hdr.ModTime.Equal(img.Created) {
			t.Errorf("%s mtime %v, want the fixed %v", name, hdr.ModTime, img.Created)
		}
		if strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
			t.Errorf("layer member %q is not a clean relative path", name)
		}
	}
}

// TestLayerNestedPaths places files below directories, as a dynamically linked program needs:
// each directory comes once, before what it holds, owned by root; the base's are reused.
func TestLayerNestedPaths(t *testing.T) {
	img := testImage()
	img.Files = []File{
		{Path: "/usr/bin/redis-server", Mode: 0o755, Data: []byte("server")},
		{Path: "/lib64/ld-linux-x86-64.so.2", Mode: 0o755, Data: []byte("loader")},
		{Path: "/usr/bin/redis-cli", Mode: 0o755, Data: []byte("client")},
		{Path: "/lib/x86_64-linux-gnu/libc.so.6", Mode: 0o644, Data: []byte("libc")},
		{Path: "/etc/redis.conf", Mode: 0o644, Data: []byte("conf")},
	}
	layer, err := img.Layer()
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, hdr.Name)
		if hdr.Typeflag == tar.TypeDir && hdr.Name != "home/nonroot/" && hdr.Name != "tmp/" && (hdr.Mode != 0o755 || hdr.Uid != 0) {
			t.Errorf("%s: mode %o owner %d, want 755 owned by root", hdr.Name, hdr.Mode, hdr.Uid)
		}
	}
	seen := map[string]bool{}
	for _, name := range order {
		if seen[name] {
			t.Errorf("%s comes twice", name)
		}
		seen[name] = true
		if parent := filepath.Dir(strings.TrimSuffix(name, "/")); parent != "." && !seen[parent+"/"] {
			t.Errorf("%s comes before its directory %s/", name, parent)
		}
	}
	want := "etc/ etc/group etc/passwd home/ home/nonroot/ tmp/ etc/redis.conf lib/ lib/x86_64-linux-gnu/ " +
		"lib/x86_64-linux-gnu/libc.so.6 lib64/ lib64/ld-linux-x86-64.so.2 usr/ usr/bin/ usr/bin/redis-cli usr/bin/redis-server"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("layer members\n got %s\nwant %s", got, want)
	}
}

func TestArchiveIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if _, err := testImage().WriteArchive(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := testImage().WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two builds of the same inputs differ")
	}
	changed := testImage()
	changed.Files[1].Data = []byte("another sts binary")
	var c bytes.Buffer
	if _, err := changed.WriteArchive(&c); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("changing a binary did not change the archive")
	}
}

func TestBadInputIsRejected(t *testing.T) {
	for name, mutate := range map[string]func(*Image){
		"tag without version":    func(img *Image) { img.Tag = "sts-operator" },
		"upper-case repository":  func(img *Image) { img.Tag = "STS:v1" },
		"tag with a slash":       func(img *Image) { img.Tag = "sts-operator:v1/x" },
		"relative file path":     func(img *Image) { img.Files[0].Path = "manager" },
		"file path escaping out": func(img *Image) { img.Files[0].Path = "/../manager" },
		"parent directory":       func(img *Image) { img.Files[0].Path = "/.." },
		"unclean file path":      func(img *Image) { img.Files[0].Path = "/usr//bin/manager" },
		"directory path":         func(img *Image) { img.Files[0].Path = "/usr/bin/" },
		"the same path twice":    func(img *Image) { img.Files[1].Path = img.Files[0].Path },
		"a base file":            func(img *Image) { img.Files[0].Path = "/etc/passwd" },
		"a base directory":       func(img *Image) { img.Files[0].Path = "/tmp" },
		"below a file":           func(img *Image) { img.Files[1].Path = img.Files[0].Path + "/sts" },
	} {
		t.Run(name, func(t *testing.T) {
			img := testImage()
			mutate(&img)
			var buf bytes.Buffer
			if _, err := img.WriteArchive(&buf); err == nil {
				t.Fatal("WriteArchive accepted it")
			}
		})
	}
	for _, tag := range []string{"sts-operator:v0.1.0-3-gce70237-dirty", "localhost:5000/team/sts-operator:dev", "sts-operator:ce70237"} {
		if err := ValidateTag(tag); err != nil {
			t.Errorf("ValidateTag(%q) = %v, want nil", tag, err)
		}
	}
}

// TestRunWritesTarball runs the command as make does, on small stand-in binaries.
func TestRunWritesTarball(t *testing.T) {
	dir := t.TempDir()
	manager := filepath.Join(dir, "manager")
	sts := filepath.Join(dir, "sts")
	for _, p := range []string{manager, sts} {
		if err := os.WriteFile(p, []byte("binary "+p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "dist", "image.tar")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	var stdout bytes.Buffer
	args := []string{"-o", out, "-tag", "sts-operator:test", "-version", "test", "-manager", manager, "-sts", sts}
	if err := run(args, &stdout); err != nil {
		t.Fatal(err)
	}
	files, m, cfg := readImageFile(t, out)
	id := digest(files[m.Config])
	if !strings.Contains(stdout.String(), id) {
		t.Errorf("output %q does not name the image id %s", stdout.String(), id)
	}
	if want := time.Unix(1700000000, 0).UTC(); !cfg.Created.Equal(want) {
		t.Errorf("created = %v, want SOURCE_DATE_EPOCH %v", cfg.Created, want)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != "test" {
		t.Errorf("labels = %v, want version test", cfg.Config.Labels)
	}
	_, layerFiles := readTar(t, files[m.Layers[0]])
	if string(layerFiles["sts"]) != "binary "+sts {
		t.Errorf("layer sts = %q, want the -sts file", layerFiles["sts"])
	}

	leftovers, _ := filepath.Glob(filepath.Join(dir, "dist", ".imagebuild-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
	if err := run([]string{"-o", out, "-tag", "sts-operator:test", "-manager", filepath.Join(dir, "missing"), "-sts", sts}, io.Discard); err == nil {
		t.Error("run accepted a missing manager binary")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if err := run(args, io.Discard); err == nil {
		t.Error("run accepted SOURCE_DATE_EPOCH=yesterday")
	}
}

// TestRunProgramMode packs one helper program, as the local cluster does for its pause image.
func TestRunProgramMode(t *testing.T) {
	dir := t.TempDir()
	pause := filepath.Join(dir, "pause")
	if err := os.WriteFile(pause, []byte("pause binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pause.tar")
	if err := run([]string{"-o", out, "-tag", "sts-local-pause:v1", "-program", pause}, io.Discard); err != nil {
		t.Fatal(err)
	}
	files, m, cfg := readImageFile(t, out)
	if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/pause" {
		t.Errorf("entrypoint = %q, want /pause", got)
	}
	_, layerFiles := readTar(t, files[m.Layers[0]])
	if string(layerFiles["pause"]) != "pause binary" {
		t.Errorf("layer pause = %q, want the -program file", layerFiles["pause"])
	}
	for _, absent := range []string{"manager", "sts"} {
		if _, ok := layerFiles[absent]; ok {
			t.Errorf("layer holds %s; a program image holds only the program", absent)
		}
	}
	if err := run([]string{"-o", out, "-tag", "sts-local-pause:v1", "-program", filepath.Join(dir, "missing")}, io.Discard); err == nil {
		t.Error("run accepted a missing program")
	}
}

// TestRunDynamicMode packs redis-server and redis-cli as build.sh does for the local cluster.
func TestRunDynamicMode(t *testing.T) {
	hostMachine(t)
	for _, p := range []string{"/usr/bin/redis-server", "/usr/bin/redis-cli"} {
		if _, err := os.Stat(p); err != nil {
			testutil.Skip(t, "%s is not installed (Debian's redis-server and redis-tools)", p)
		}
	}
	dir := t.TempDir()
	var listing bytes.Buffer
	flags := []string{"-dynamic", "/usr/bin/redis-server", "-also", "/usr/bin/redis-cli"}
	if err := run(append(flags, "-list"), &listing); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(listing.String(), "\n"), "\n") {
		sum, p, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("-list line %q: want \"<sha256>  <path>\"", line)
		}
		listed[p] = sum
	}
	out := filepath.Join(dir, "redis.tar")
	if err := run(append(flags, "-o", out, "-tag", "sts-e2e-redis:test"), io.Discard); err != nil {
		t.Fatal(err)
	}
	files, m, cfg := readImageFile(t, out)
	if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/usr/bin/redis-server" {
		t.Errorf("entrypoint = %q, want /usr/bin/redis-server", got)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("User = %q, want the non-root 65532:65532", cfg.Config.User)
	}
	headers, layerFiles := readTar(t, files[m.Layers[0]])
	regular := 0
	for name, hdr := range headers {
		if hdr.Typeflag != tar.TypeReg || name == "etc/passwd" || name == "etc/group" {
			continue
		}
		regular++
		if sum := listed["/"+name]; sum != strings.TrimPrefix(digest(layerFiles[name]), "sha256:") {
			t.Errorf("%s: -list says %q, the layer holds %s", name, sum, digest(layerFiles[name]))
		}
	}
	if regular != len(listed) {
		t.Errorf("the layer has %d files, -list printed %d", regular, len(listed))
	}

	for _, bad := range [][]string{
		{"-also", "/usr/bin/redis-cli", "-o", out, "-tag", "x:y"}, // -also without -dynamic
		{"-list"}, // -list without -dynamic
		{"-dynamic", "/usr/bin/redis-server", "-program", out, "-o", out, "-tag", "x:y"}, // both modes
		{"-dynamic", "/usr/bin/redis-server", "-arch", "riscv64", "-list"},               // an architecture it has no directories for
		{"-dynamic", "/usr/bin/redis-server", "-list", "extra"},                          // a stray argument
	} {
		if err := run(bad, io.Discard); err == nil {
			t.Errorf("run accepted %q", bad)
		}
	}
}
