// Command fuseserver serves package fuseserve's filesystem on a directory:
// `fuseserver DIR` prints "ready" once mounted and runs until the mount
// goes or it is killed. The scenarios copy it under the name of the FUSE
// server they play (gcsfuse). Only for tests.
//
// Files:
//   - main.go: the command.
package main
