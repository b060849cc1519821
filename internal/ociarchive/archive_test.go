package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// savedArchive writes an archive laid out as docker save (Docker 20.10)
// writes one: manifest.json, the config, one directory per layer.
func savedArchive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestConvert(t *testing.T) {
	layer := "a layer's tar stream"
	config := `{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["` + digest(layer) + `"]}}`
	in := savedArchive(t, map[string]string{
		"manifest.json": `[{"Config":"abc.json","RepoTags":["mntleak:0.1.0"],"Layers":["l1/layer.tar"]}]`,
		"abc.json":      config,
		"l1/layer.tar":  layer,
		"l1/VERSION":    "1.0",
		"repositories":  `{"mntleak":{"0.1.0":"l1"}}`,
	})
	var out bytes.Buffer
	if err := Convert(bytes.NewReader(in), &out, "mntleak:0.1.0"); err != nil {
		t.Fatal(err)
	}
	files, err := readTar(&out)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if d, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && digest(string(b)) != "sha256:"+d {
			t.Errorf("blob %s holds content of digest %s", name, digest(string(b)))
		}
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"])
	}
	var index ociIndex
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json %s: %v", files["index.json"], err)
	}
	md := index.Manifests[0]
	if md.Annotations["io.containerd.image.name"] != "docker.io/library/mntleak:0.1.0" || md.Annotations["org.opencontainers.image.ref.name"] != "0.1.0" {
		t.Errorf("index annotations %v", md.Annotations)
	}
	var m ociManifest
	if err := json.Unmarshal(files[blobPath(md.Digest)], &m); err != nil {
		t.Fatalf("manifest blob %s: %v", md.Digest, err)
	}
	if m.Config.Digest != digest(config) || m.Config.MediaType != mediaConfig || len(m.Layers) != 1 || m.Layers[0].Digest != digest(layer) || m.Layers[0].Size != int64(len(layer)) {
		t.Errorf("manifest %+v", m)
	}
	var docker []dockerManifest
	if err := json.Unmarshal(files["manifest.json"], &docker); err != nil || len(docker) != 1 {
		t.Fatalf("manifest.json %s: %v", files["manifest.json"], err)
	}
	if _, ok := files[docker[0].Config]; !ok || docker[0].RepoTags[0] != "mntleak:0.1.0" || docker[0].Layers[0] != blobPath(digest(layer)) {
		t.Errorf("manifest.json for docker load %+v", docker[0])
	}
}

func TestBrokenArchives(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"not docker save", map[string]string{"index.json": "{}"}, "no manifest.json"},
		{"two images", map[string]string{"manifest.json": `[{"Config":"a"},{"Config":"b"}]`}, "2 images"},
		{"missing layer", map[string]string{"manifest.json": `[{"Config":"c.json","Layers":["x/layer.tar"]}]`, "c.json": "{}"}, "layer x/layer.tar is not in the archive"},
		{"missing config", map[string]string{"manifest.json": `[{"Config":"c.json"}]`}, "config c.json is not in the archive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Convert(bytes.NewReader(savedArchive(t, tt.files)), &bytes.Buffer{}, "mntleak:1")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestContainerdName(t *testing.T) {
	for ref, want := range map[string]string{
		"mntleak:0.1.0":                      "docker.io/library/mntleak:0.1.0",
		"ops/mntleak:1":                      "docker.io/ops/mntleak:1",
		"registry.example.com/ops/mntleak:1": "registry.example.com/ops/mntleak:1",
		"localhost/mntleak:1":                "localhost/mntleak:1",
		"registry:5000/mntleak:1":            "registry:5000/mntleak:1",
	} {
		if got := containerdName(ref); got != want {
			t.Errorf("containerdName(%s) = %s, want %s", ref, got, want)
		}
	}
	if tagOf("registry:5000/mntleak") != "latest" || tagOf("mntleak:0.1.0") != "0.1.0" {
		t.Errorf("tagOf")
	}
}
