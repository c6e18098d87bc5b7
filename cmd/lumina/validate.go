package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/dumper"
)

// validateFlags: lumina validate.
type validateFlags struct {
	testbed, out string
	mem          *memoryLimit
	sets         *settings
}

func (f *validateFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.testbed, "testbed", "", "check the files for this testbed, as `lumina run --testbed` runs them: sim, netns or remote")
	fs.StringVar(&f.out, "o", "", "check the free disk under this results `dir`, as `lumina run -o` would use it (default: each test's result-path)")
	f.mem = addMemoryLimit(fs)
	f.sets = addSettings(fs)
}

func (f *validateFlags) check(args []string) error {
	if len(args) == 0 {
		return usagef("validate needs at least one YAML file or folder")
	}
	return nil
}

// runValidate is lumina validate: every file (a folder: its *.yaml and
// *.yml, as run reads it) loaded as lumina run would, "FILE: ok" or its
// errors on stdout.
func runValidate(_ context.Context, f *validateFlags, args []string, stdout, stderr io.Writer) error {
	var files []string
	for _, a := range args {
		if st, err := os.Stat(a); err != nil || !st.IsDir() {
			files = append(files, a) // validateFile reports a missing file
			continue
		}
		fs, err := config.TestFiles([]string{a})
		if err != nil {
			return usagef("validate: %v", err)
		}
		files = append(files, fs...)
	}
	o := config.LoadOptions{Resources: resources(f.mem, f.out), Personalities: true, NoDPDK: !dumper.DPDKAvailable, Set: *f.sets}
	if f.testbed != "" {
		tb, err := config.ParseTestbed(f.testbed)
		if err != nil || f.testbed != tb.String() {
			return usagef("validate: --testbed must be sim, netns or remote, not %q", f.testbed)
		}
		o.Testbed = &tb
	}
	bad := 0
	for _, path := range files {
		if err := validateFile(stdout, stderr, path, o); err != nil {
			bad++
		}
	}
	if bad > 0 {
		return errSilent
	}
	return nil
}

func validateFile(w, stderr io.Writer, path string, o config.LoadOptions) error {
	o.Warn = func(e config.Error) { fmt.Fprintln(stderr, e.Error()) } // warnings (exit code unchanged)
	_, err := config.LoadWith(path, o)
	var list config.ErrorList
	switch {
	case err == nil:
		fmt.Fprintf(w, "%s: ok\n", path)
	case errors.As(err, &list):
		for _, e := range list {
			fmt.Fprintln(w, e.Error())
		}
	default:
		fmt.Fprintf(w, "%s: %v\n", path, err)
	}
	return err
}
