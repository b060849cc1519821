// Package filemaps holds one test about the tree: every Go package has a
// doc.go whose package comment ends with a file map, a part starting with
// a line "Files:" that names each of the package's source files (or, in
// a package of tests only, each test file) and no .go file the package
// does not have. A file added, removed or renamed without its line in
// the map fails the test with the file's name.
//
// The map is the package comment from that line to its end; a name counts
// when it is a bare file name ending in .go (a path such as
// cmd/mntleak/main.go names another package's file) and it may hold a
// "*" (tracer's generated *_bpfel.go). doc.go itself need not be listed.
//
// Files: filemaps_test.go (TestFileMaps; what it takes for a map's names,
// TestFileMapReading).
package filemaps
