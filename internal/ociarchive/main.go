package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "", "the archive docker save wrote")
	out := flag.String("out", "", "the OCI archive to write")
	ref := flag.String("ref", "", "the image's name:tag (as tagged in Docker)")
	flag.Parse()
	if *in == "" || *out == "" || *ref == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: ociarchive -in SAVED.tar -out OCI.tar -ref NAME:TAG")
		os.Exit(2)
	}
	if err := convertFile(*in, *out, *ref); err != nil {
		fmt.Fprintf(os.Stderr, "ociarchive: %v\n", err)
		os.Exit(1)
	}
}

// convertFile converts in to out, written to a temporary file first so a
// failure leaves no half archive at out.
func convertFile(in, out, ref string) error {
	src, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("open %s: %w", in, err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dirOf(out), ".ociarchive-*")
	if err != nil {
		return fmt.Errorf("create next to %s: %w", out, err)
	}
	defer os.Remove(tmp.Name())
	if err := Convert(src, tmp, ref); err != nil {
		tmp.Close()
		return fmt.Errorf("convert %s: %w", in, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("rename to %s: %w", out, err)
	}
	return nil
}

func dirOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i+1]
		}
	}
	return "."
}
