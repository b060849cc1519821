package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// The media types of an OCI image.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// dockerManifest is one entry of a docker save archive's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

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

// Convert reads a docker save archive of one image from r and writes its
// OCI layout archive, named ref, to w. Layers are kept uncompressed, so a
// layer's digest is its diff id and the config needs no change.
func Convert(r io.Reader, w io.Writer, ref string) error {
	files, err := readTar(r)
	if err != nil {
		return err
	}
	raw, ok := files["manifest.json"]
	if !ok {
		return errors.New("no manifest.json: not a docker save archive")
	}
	var saved []dockerManifest
	if err := json.Unmarshal(raw, &saved); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	if len(saved) != 1 {
		return fmt.Errorf("manifest.json has %d images, want 1", len(saved))
	}
	blobs := map[string][]byte{}
	put := func(media string, b []byte) descriptor {
		sum := sha256.Sum256(b)
		d := descriptor{MediaType: media, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(b))}
		blobs[d.Digest] = b
		return d
	}
	cfg, ok := files[saved[0].Config]
	if !ok {
		return fmt.Errorf("config %s is not in the archive", saved[0].Config)
	}
	m := ociManifest{SchemaVersion: 2, MediaType: mediaManifest, Config: put(mediaConfig, cfg)}
	docker := dockerManifest{Config: blobPath(m.Config.Digest), RepoTags: []string{ref}}
	for _, l := range saved[0].Layers {
		b, ok := files[l]
		if !ok {
			return fmt.Errorf("layer %s is not in the archive", l)
		}
		d := put(mediaLayer, b)
		m.Layers = append(m.Layers, d)
		docker.Layers = append(docker.Layers, blobPath(d.Digest))
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	md := put(mediaManifest, mb)
	md.Annotations = map[string]string{
		"io.containerd.image.name":          containerdName(ref),
		"org.opencontainers.image.ref.name": tagOf(ref),
	}
	index, err := json.Marshal(ociIndex{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{md}})
	if err != nil {
		return err
	}
	dockerJSON, err := json.Marshal([]dockerManifest{docker})
	if err != nil {
		return err
	}
	return writeTar(w, blobs, map[string][]byte{
		"oci-layout":    []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json":    index,
		"manifest.json": dockerJSON,
	})
}

func blobPath(digest string) string { return "blobs/sha256/" + digest[len("sha256:"):] }

// readTar reads every regular file of a tar archive.
func readTar(r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, tr); err != nil {
			return nil, fmt.Errorf("read %s: %w", h.Name, err)
		}
		files[h.Name] = buf.Bytes()
	}
}

// writeTar writes the blobs under blobs/sha256/ and the named files, in a
// stable order.
func writeTar(w io.Writer, blobs, named map[string][]byte) error {
	tw := tar.NewWriter(w)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	write := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		_, err := tw.Write(b)
		return err
	}
	for _, d := range sortedKeys(blobs) {
		if err := write(blobPath(d), blobs[d]); err != nil {
			return err
		}
	}
	for _, n := range sortedKeys(named) {
		if err := write(n, named[n]); err != nil {
			return err
		}
	}
	return tw.Close()
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
