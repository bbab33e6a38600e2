package main

import (
	"encoding/json"
	"strings"
)

// The OCI image layout (image-spec's image-layout.md) that WriteArchive writes next to
// manifest.json, as `docker save` has since Docker 25: the same blobs, an OCI manifest naming
// them, index.json naming the manifest, and oci-layout. One tarball is then both a docker-archive
// (`docker load`, `ctr images import`) and an OCI layout (`skopeo copy oci-archive:...`, `crane`,
// `podman load`, `oras`), so a registry push needs no Docker engine.
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar" // uncompressed, as in the docker-archive
	ociLayout         = `{"imageLayoutVersion":"1.0.0"}`
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociManifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type ociIndex struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// ociManifestAndIndex returns the OCI manifest of an image with that config and layer, and the
// index.json naming it. The manifest carries the two names Docker's archives carry:
// org.opencontainers.image.ref.name, the tag (what `skopeo copy oci-archive:<file>:<tag>`
// selects), and io.containerd.image.name, the full reference containerd names the image by on
// import, the same name it gives the docker-archive's RepoTags.
func ociManifestAndIndex(tag string, cfg, layer []byte) (manifest, index []byte, err error) {
	manifest, err = json.Marshal(ociManifest{
		SchemaVersion: 2,
		MediaType:     mediaTypeManifest,
		Config:        descriptor{MediaType: mediaTypeConfig, Digest: "sha256:" + sha256Hex(cfg), Size: int64(len(cfg))},
		Layers:        []descriptor{{MediaType: mediaTypeLayer, Digest: "sha256:" + sha256Hex(layer), Size: int64(len(layer))}},
	})
	if err != nil {
		return nil, nil, err
	}
	name, version := tag[:strings.LastIndex(tag, ":")], tag[strings.LastIndex(tag, ":")+1:]
	index, err = json.Marshal(ociIndex{
		SchemaVersion: 2,
		MediaType:     mediaTypeIndex,
		Manifests: []descriptor{{
			MediaType: mediaTypeManifest,
			Digest:    "sha256:" + sha256Hex(manifest),
			Size:      int64(len(manifest)),
			Annotations: map[string]string{
				"io.containerd.image.name":          fullName(name) + ":" + version,
				"org.opencontainers.image.ref.name": version,
			},
		}},
	})
	return manifest, index, err
}

// fullName is the repository name as Docker and containerd spell it in full: "sts-operator" is
// docker.io/library/sts-operator, "team/x" docker.io/team/x; a first component with a dot or a
// port, or localhost, is a registry.
func fullName(name string) string {
	first, _, hasPath := strings.Cut(name, "/")
	switch {
	case !hasPath:
		return "docker.io/library/" + name
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return name
	default:
		return "docker.io/" + name
	}
}
