// Command mutation turns the JSON results of gremlins (make mutation,
// e2e/testkit/mutation/run.sh) into the markdown of docs/mutation.md: one row
// per file with its killed, lived, not covered, timed out and not viable
// mutants, its efficacy (killed over killed and lived) and its coverage
// (killed and lived over those and the not covered), the killed mutants
// that are a string + made a - (they do not compile, and gremlins counts
// them as killed) and the efficacy without them, a total row, then every
// mutant that lived or was not covered, by file:line:column. Run it from
// the module's root: the sources are read to find the string +.
//
//	go run ./e2e/testkit/mutation bin/mutation/correlate.json bin/mutation/release.json
//
// Each file is named for its package (run.sh writes correlate.json,
// release.json; a/b.json is package a/b), and gremlins names the files
// under the package: the table names them package/file. A file that is
// not JSON is read as gremlins' log (its "KILLED TYPE at file:line:col"
// lines), which is what an interrupted run leaves.
//
// Files: main.go; run.sh (make mutation: gremlins as an unprivileged user).
package main
