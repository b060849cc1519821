// Package testnames holds one test about the other tests: within a
// package, no test or fuzz target's name is a prefix of another's, so
// `go test -run '^TestX'` and the habit of `-run TestX` select one test.
//
// Files: doc.go; testnames_test.go.
package testnames
