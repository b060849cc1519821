// Package logging builds the zap logger mntleak's commands use. There is no
// global logger: commands build one here and pass it down, naming it per
// component (logger.Named("tracer")).
//
// Files: logging.go.
package logging
