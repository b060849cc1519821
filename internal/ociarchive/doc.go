// Command ociarchive turns the archive `docker save` writes into an OCI
// image layout archive that both `docker load` and `ctr images import`
// accept: blobs/sha256/ holds the config, the layers and an OCI manifest;
// index.json names the image for containerd (io.containerd.image.name,
// normalized as the kubelet asks for it: mntleak:0.1.0 is
// docker.io/library/mntleak:0.1.0); manifest.json, pointing at the same
// blobs, is what Docker's own loader reads. make image-tar runs it
// (deploy/image/image.sh tar).
//
// Files: main.go (flags, errors), archive.go (Convert: read the docker
// archive, write the layout), ref.go (the containerd name of a tag).
package main
