package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/netlumina/lumina/examples"
)

// starterTest is what `lumina init` writes without an EXAMPLE: a minimal
// commented sim test (init_test.go checks it validates and runs).
//
//go:embed testdata/init.yaml
var starterTest []byte

// initFlags: lumina init [EXAMPLE].
type initFlags struct{ out string }

func (f *initFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "o", "", "write the test to `FILE` (default: EXAMPLE.yaml, or test.yaml without an EXAMPLE; - for stdout); never overwritten")
}

func (f *initFlags) check(args []string) error {
	if len(args) > 1 {
		return usagef("init takes at most one EXAMPLE")
	}
	if len(args) == 1 && !slices.Contains(exampleNames(), strings.TrimSuffix(args[0], ".yaml")) {
		return usagef("init: no example %q; want one of: %s", args[0], strings.Join(exampleNames(), ", "))
	}
	return nil
}

// exampleNames lists the examples lumina init can copy (examples/*.yaml
// without .yaml), sorted.
func exampleNames() []string {
	files, _ := fs.Glob(examples.FS, "*.yaml")
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(f, ".yaml")
	}
	return names
}

// runInit is lumina init: it writes the starter test, or a copy of an
// example, to a file that does not exist yet (or to stdout).
func runInit(_ context.Context, f *initFlags, args []string, stdout, stderr io.Writer) error {
	data, out := starterTest, "test.yaml"
	if len(args) == 1 {
		name := strings.TrimSuffix(args[0], ".yaml")
		b, err := examples.FS.ReadFile(name + ".yaml")
		if err != nil {
			return err
		}
		data, out = b, name+".yaml"
	}
	if f.out != "" {
		out = f.out
	}
	if out == "-" {
		_, err := stdout.Write(data)
		return err
	}
	file, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("init: %s exists; not overwriting it (-o FILE writes elsewhere)", out)
	}
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if _, err := file.Write(data); err != nil {
		file.Close()
		return fmt.Errorf("init: %w", err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	fmt.Fprintf(stderr, "lumina: wrote %s; check it with 'lumina validate %s', run it with 'lumina run %s'\n", out, out, out)
	return nil
}
