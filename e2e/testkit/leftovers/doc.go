// Command leftovers checks that a test run left nothing on the machine:
// `leftovers save FILE` before the run keeps what is there already, and
// `leftovers check FILE` after it lists, and exits 1 on, anything new
// (mounts naming mntleak, loop devices of test images, /tmp/mntleak-*,
// /var/lib/mntleak-*, Go tests' /tmp/Test*). What is there before the run
// is listed by save, not failed on. make test runs both around go test.
//
// Files: main.go.
package main
