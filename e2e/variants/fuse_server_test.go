package variants

// fuseEnv names the directory the test binary serves a FUSE filesystem on
// when started as the FUSE server helper (e2e/testkit/fuseserve): the
// server mounts it itself, says "ready", and serves until the mount goes
// (exit 0) or it is killed.
const fuseEnv = "MNTLEAK_VARIANT_FUSE"
