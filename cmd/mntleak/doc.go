// Command mntleak traces mount-namespace lineage and explains mount leaks.
//
//	mntleak trace [flags]   stream mount-lineage events until SIGINT/SIGTERM
//
// This package holds only flag parsing and wiring; the work is done in
// tracer, event and output.
package main
