package main

import (
	"fmt"
	"os"

	"github.com/mntleak/mntleak/e2e/testkit/fuseserve"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fuseserver DIR")
		os.Exit(2)
	}
	if err := fuseserve.Serve(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fuseserver:", err)
		os.Exit(1)
	}
}
