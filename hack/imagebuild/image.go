package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

// NonRootID is the user and group the image runs as: distroless's "nonroot", so the image built
// here and the one the Dockerfile builds behave the same under runAsNonRoot.
const NonRootID = 65532

// Image is a single-layer Linux image: a few files plus the settings a runtime reads from the
// image config.
type Image struct {
	// Tag is the repository:tag written into manifest.json, e.g. "sts-operator:v0.1.0".
	Tag string
	// Arch is the GOARCH of the binaries, e.g. "amd64".
	Arch       string
	Entrypoint []string
	Env        []string
	Labels     map[string]string
	// Created is the image creation time and the mtime of every tar entry: fixed, so the same
	// inputs always give the same bytes.
	Created time.Time
	Files   []File
}

// File is a regular file placed in the layer, owned by root and not writable by the image user.
type File struct {
	Path string // absolute path inside the image, e.g. "/manager"
	Mode int64
	Data []byte
}

// Written describes an archive after it was written.
type Written struct {
	ConfigDigest string // sha256:<hex> of the config JSON: the image ID
	DiffID       string // sha256:<hex> of the uncompressed layer tar
}

// tagPattern is Docker's reference grammar reduced to what this tool needs: an optional
// registry/path, a repository name in lower case and a tag.
var tagPattern = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// ValidateTag reports whether tag is a repository:tag that docker load and containerd accept.
func ValidateTag(tag string) error {
	if !tagPattern.MatchString(tag) {
		return fmt.Errorf("invalid image tag %q: want repository:tag, lower-case repository, tag of letters, digits, '_', '.', '-' (at most 128)", tag)
	}
	return nil
}

// passwd and group give the non-root user a name, as distroless's nonroot image does; tools
// that resolve the current user (and Go's os/user) fail without an entry.
var (
	passwd = fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootID, NonRootID)
	group  = fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootID)
)

// Layer returns the uncompressed layer tar: the base filesystem a program expects (user
// database, a world-writable /tmp, the user's home), then the image's files in path order, each
// after the directories that lead to it (owned by root, mode 755) where the base lacks them.
func (img Image) Layer() ([]byte, error) {
	entries := []entry{
		img.dir("etc/", 0o755, 0),
		img.file("etc/group", 0o644, []byte(group)),
		img.file("etc/passwd", 0o644, []byte(passwd)),
		img.dir("home/", 0o755, 0),
		img.dir("home/nonroot/", 0o700, NonRootID),
		// Sticky and world-writable like any /tmp, for programs that write temporary files
		// when the root filesystem is not mounted read-only.
		img.dir("tmp/", 0o1777, 0),
	}
	isDir := map[string]bool{} // every member so far, by its name without a trailing slash
	for _, e := range entries {
		isDir[strings.TrimSuffix(e.hdr.Name, "/")] = e.hdr.Typeflag == tar.TypeDir
	}
	files := append([]File(nil), img.Files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		name, err := layerPath(f.Path)
		if err != nil {
			return nil, err
		}
		parts := strings.Split(name, "/")
		for i := 1; i < len(parts); i++ {
			parent := strings.Join(parts[:i], "/")
			dir, seen := isDir[parent]
			if seen && !dir {
				return nil, fmt.Errorf("file path %q: /%s is a file", f.Path, parent)
			}
			if !seen {
				entries = append(entries, img.dir(parent+"/", 0o755, 0))
				isDir[parent] = true
			}
		}
		if _, seen := isDir[name]; seen {
			return nil, fmt.Errorf("file path %q: the image has it already", f.Path)
		}
		isDir[name] = false
		entries = append(entries, img.file(name, f.Mode, f.Data))
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, entries); err != nil {
		return nil, fmt.Errorf("writing layer: %w", err)
	}
	return buf.Bytes(), nil
}

// entry is one tar member; every member of both tars gets the image's fixed mtime.
type entry struct {
	hdr  *tar.Header
	data []byte
}

func (img Image) dir(name string, mode int64, owner int) entry {
	return entry{hdr: &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: owner, Gid: owner, ModTime: img.Created, Format: tar.FormatUSTAR}}
}

// file makes a member owned by root, so the image user can run it but not change it.
func (img Image) file(name string, mode int64, data []byte) entry {
	return entry{
		hdr:  &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: img.Created, Format: tar.FormatUSTAR},
		data: data,
	}
}

func writeTar(w io.Writer, entries []entry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := tw.WriteHeader(e.hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// layerPath turns "/manager" or "/usr/bin/redis-server" into "manager" or "usr/bin/redis-server":
// layer entries are relative to the root. It refuses anything but a clean absolute path.
func layerPath(p string) (string, error) {
	name := strings.TrimPrefix(p, "/")
	if name == p || name == "" || path.Clean(p) != p || strings.Contains(name, "\x00") {
		return "", fmt.Errorf("file path %q: want a clean absolute path such as /manager", p)
	}
	return name, nil
}

// config is the part of the OCI/Docker image config that this image sets.
type config struct {
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Created      time.Time     `json:"created"`
	Config       runtimeConfig `json:"config"`
	RootFS       rootFS        `json:"rootfs"`
	History      []history     `json:"history"`
}

type runtimeConfig struct {
	User       string            `json:"User"`
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint"`
	WorkingDir string            `json:"WorkingDir"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by"`
}

// manifestEntry is one element of a docker-archive's manifest.json.
type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// Config returns the image config JSON for a layer with the given diff ID.
func (img Image) Config(diffID string) ([]byte, error) {
	return json.Marshal(config{
		Architecture: img.Arch,
		OS:           "linux",
		Created:      img.Created,
		Config: runtimeConfig{
			User:       fmt.Sprintf("%d:%d", NonRootID, NonRootID),
			Env:        img.Env,
			Entrypoint: img.Entrypoint,
			WorkingDir: "/",
			Labels:     img.Labels,
		},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{diffID}},
		History: []history{{Created: img.Created, CreatedBy: "hack/imagebuild"}},
	})
}

// WriteArchive writes the image as a docker-archive (the format of `docker save`): blobs named
// by their digest under blobs/sha256/ and a manifest.json that names the config, the tag and the
// layer. `docker load` and `ctr images import` both read it. The same tarball is an OCI image
// layout too (oci.go).
func (img Image) WriteArchive(w io.Writer) (Written, error) {
	if err := ValidateTag(img.Tag); err != nil {
		return Written{}, err
	}
	layer, err := img.Layer()
	if err != nil {
		return Written{}, err
	}
	layerHex := sha256Hex(layer)
	cfg, err := img.Config("sha256:" + layerHex)
	if err != nil {
		return Written{}, fmt.Errorf("encoding config: %w", err)
	}
	cfgHex := sha256Hex(cfg)
	manifest, err := json.Marshal([]manifestEntry{{
		Config:   "blobs/sha256/" + cfgHex,
		RepoTags: []string{img.Tag},
		Layers:   []string{"blobs/sha256/" + layerHex},
	}})
	if err != nil {
		return Written{}, fmt.Errorf("encoding manifest: %w", err)
	}

	ociManifest, index, err := ociManifestAndIndex(img.Tag, cfg, layer)
	if err != nil {
		return Written{}, fmt.Errorf("encoding the OCI manifest: %w", err)
	}

	entries := []entry{
		img.dir("blobs/", 0o755, 0),
		img.dir("blobs/sha256/", 0o755, 0),
		img.file("blobs/sha256/"+layerHex, 0o644, layer),
		img.file("blobs/sha256/"+cfgHex, 0o644, cfg),
		img.file("blobs/sha256/"+sha256Hex(ociManifest), 0o644, ociManifest),
		img.file("index.json", 0o644, index),
		img.file("oci-layout", 0o644, []byte(ociLayout)),
		img.file("manifest.json", 0o644, manifest),
	}
	if err := writeTar(w, entries); err != nil {
		return Written{}, fmt.Errorf("writing archive: %w", err)
	}
	return Written{ConfigDigest: "sha256:" + cfgHex, DiffID: "sha256:" + layerHex}, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
