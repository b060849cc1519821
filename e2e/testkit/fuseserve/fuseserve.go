package fuseserve

import (
	"fmt"
	"io"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FSType is the type the mount shows in mountinfo.
const FSType = "fuse.mntleaktest"

// root is the served filesystem: an empty directory.
type root struct{ fs.Inode }

// Serve mounts the filesystem on dir, writes "ready" to out once the
// kernel has its answer to INIT, and serves until the mount goes.
func Serve(dir string, out io.Writer) error {
	server, err := fs.Mount(dir, &root{}, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMount: true, DirectMountStrict: true, FsName: "mntleaktest", Name: "mntleaktest"}})
	if err != nil {
		return fmt.Errorf("serve FUSE on %s: %w", dir, err)
	}
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		_ = server.Unmount()
		return fmt.Errorf("serve FUSE on %s: %w", dir, err)
	}
	server.Wait()
	return nil
}
