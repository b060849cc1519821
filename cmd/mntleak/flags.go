package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/procfs"
)

// uint32List is a repeatable, comma-separated list flag of numbers.
type uint32List struct {
	vals *[]uint32
	what string
}

func (l uint32List) String() string {
	if l.vals == nil {
		return ""
	}
	parts := make([]string, len(*l.vals))
	for i, v := range *l.vals {
		parts[i] = strconv.FormatUint(uint64(v), 10)
	}
	return strings.Join(parts, ",")
}

func (l uint32List) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		// Accept the form readlink(1) prints for namespaces: mnt:[4026531840].
		part = strings.TrimSuffix(strings.TrimPrefix(part, "mnt:["), "]")
		v, err := strconv.ParseUint(part, 10, 32)
		if err != nil || v == 0 {
			return fmt.Errorf("invalid %s %q: want a positive number", l.what, part)
		}
		*l.vals = append(*l.vals, uint32(v))
	}
	return nil
}

// stringList is a repeatable, comma-separated list flag.
type stringList struct{ vals *[]string }

func (l stringList) String() string {
	if l.vals == nil {
		return ""
	}
	return strings.Join(*l.vals, ",")
}

func (l stringList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			return fmt.Errorf("empty name in %q", s)
		}
		*l.vals = append(*l.vals, part)
	}
	return nil
}

// parseFlags parses args with fs. A bad flag is returned, not printed: the
// command prints it as its one error line. -h prints the usage and returns
// flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		usage()
	}
	return err
}

// parseCommand parses a command's flags: -h prints its usage (exit 0), a
// bad flag is one line on stderr (exit 2); done says the command ends.
func parseCommand(fs *flag.FlagSet, args []string, name string, stderr io.Writer) (code int, done bool) {
	err := parseFlags(fs, args)
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, flag.ErrHelp):
		return exitOK, true
	}
	fmt.Fprintf(stderr, "mntleak %s: %v\n", name, err)
	return exitUsage, true
}

// selfNS is mntleak's own mount namespace.
func selfNS() (uint32, error) {
	link, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return 0, err
	}
	return procfs.ParseNSLink(link)
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
