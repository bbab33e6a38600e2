package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestArchiveIsAnOCILayout reads the archive as an OCI image layout reader does: oci-layout
// gives the version, index.json names a manifest blob by digest and size, the manifest names the
// config and the layer the same way, each blob's name is its digest, and the names containerd
// and skopeo use are there.
func TestArchiveIsAnOCILayout(t *testing.T) {
	img := testImage()
	var buf bytes.Buffer
	if _, err := img.WriteArchive(&buf); err != nil {
		t.Fatal(err)
	}
	_, files := readTar(t, buf.Bytes())
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", got)
	}
	// blob returns the blob a descriptor names, checking its digest, size and name.
	blob := func(d descriptor, mediaType string) []byte {
		t.Helper()
		if d.MediaType != mediaType {
			t.Errorf("media type %q, want %q", d.MediaType, mediaType)
		}
		data, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok {
			t.Fatalf("blob %s is not in the archive", d.Digest)
		}
		if digest(data) != d.Digest || int64(len(data)) != d.Size {
			t.Errorf("blob %s: digest %s, size %d; descriptor size %d", d.Digest, digest(data), len(data), d.Size)
		}
		return data
	}
	var index ociIndex
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if index.SchemaVersion != 2 || len(index.Manifests) != 1 {
		t.Fatalf("index.json = %+v, want schemaVersion 2 and one manifest", index)
	}
	d := index.Manifests[0]
	if got := d.Annotations["org.opencontainers.image.ref.name"]; got != "v1.2.3" {
		t.Errorf("ref.name = %q, want the tag v1.2.3", got)
	}
	if got := d.Annotations["io.containerd.image.name"]; got != "docker.io/library/sts-operator:v1.2.3" {
		t.Errorf("io.containerd.image.name = %q, want docker.io/library/sts-operator:v1.2.3", got)
	}
	var manifest ociManifest
	if err := json.Unmarshal(blob(d, mediaTypeManifest), &manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if manifest.SchemaVersion != 2 || len(manifest.Layers) != 1 {
		t.Fatalf("manifest = %+v, want schemaVersion 2 and one layer", manifest)
	}
	var cfg config
	if err := json.Unmarshal(blob(manifest.Config, mediaTypeConfig), &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	if layer := blob(manifest.Layers[0], mediaTypeLayer); cfg.RootFS.DiffIDs[0] != digest(layer) {
		t.Errorf("the config's diff_id %s is not the layer's digest %s", cfg.RootFS.DiffIDs[0], digest(layer))
	}
}

func TestFullName(t *testing.T) {
	for name, want := range map[string]string{
		"sts-operator":                      "docker.io/library/sts-operator",
		"team/sts-operator":                 "docker.io/team/sts-operator",
		"registry.example.com/sts-operator": "registry.example.com/sts-operator",
		"localhost:5000/sts-operator":       "localhost:5000/sts-operator",
		"localhost/sts-operator":            "localhost/sts-operator",
		"ghcr.io/sts-operator/sts-operator": "ghcr.io/sts-operator/sts-operator",
	} {
		if got := fullName(name); got != want {
			t.Errorf("fullName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestSkopeoReadsTheOCIArchive has skopeo, an OCI tool that knows nothing of this one, read the
// tarball as an OCI archive by its tag and copy it to an OCI directory, as a push to a registry
// would read it. Skipped where Debian's skopeo is not installed.
func TestSkopeoReadsTheOCIArchive(t *testing.T) {
	if _, err := exec.LookPath("skopeo"); err != nil {
		testutil.Skip(t, "skopeo is not installed (Debian: apt-get install skopeo)")
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "image.tar")
	if _, err := writeFile(archive, testImage()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	skopeo := func(args ...string) []byte {
		t.Helper()
		out, err := exec.CommandContext(ctx, "skopeo", append([]string{"--insecure-policy"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var inspected struct {
		Architecture, Os string
		Labels           map[string]string
	}
	if err := json.Unmarshal(skopeo("inspect", "oci-archive:"+archive+":v1.2.3"), &inspected); err != nil {
		t.Fatal(err)
	}
	if inspected.Architecture != "amd64" || inspected.Os != "linux" || inspected.Labels["org.opencontainers.image.version"] != "v1.2.3" {
		t.Errorf("skopeo inspect = %+v, want linux/amd64 with the version label", inspected)
	}
	skopeo("copy", "oci-archive:"+archive+":v1.2.3", "oci:"+filepath.Join(dir, "copy")+":v1.2.3")
}
