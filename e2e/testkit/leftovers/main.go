package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "save" && os.Args[1] != "check") {
		fmt.Fprintln(os.Stderr, "usage: leftovers save|check FILE")
		os.Exit(2)
	}
	file := os.Args[2]
	now := privtest.Leftovers()
	if os.Args[1] == "save" {
		if len(now) > 0 {
			// Not this run's doing, so not a failure; but an interrupted
			// run's, to be removed by hand.
			fmt.Fprintf(os.Stderr, "leftovers: already on the machine before the run (an interrupted run's?):\n  %s\n",
				strings.Join(now, "\n  "))
		}
		if err := os.WriteFile(file, []byte(strings.Join(now, "\n")), 0o600); err != nil {
			fmt.Fprintf(os.Stderr, "leftovers: %v\n", err)
			os.Exit(2)
		}
		return
	}
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "leftovers: %v\n", err)
		os.Exit(2)
	}
	os.Remove(file)
	if left := privtest.NewLeftovers(strings.Split(string(b), "\n"), now); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "the tests left behind:\n  %s\n", strings.Join(left, "\n  "))
		os.Exit(1)
	}
	fmt.Println("leftovers: the tests left nothing behind")
}
