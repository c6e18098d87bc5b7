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

func init() {
	register(&command{
		name: "validate", args: "FILE.yaml|DIR...",
		summary: "check test files: prints 'FILE: ok' or one 'FILE:LINE:COL: message' per error",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			testbed := fs.String("testbed", "", "check the files for this testbed, as `lumina run --testbed` runs them: sim, netns or remote")
			out := fs.String("o", "", "check the free disk under this results `dir`, as `lumina run -o` would use it (default: each test's result-path)")
			mem := addMemoryLimit(fs)
			sets := addSettings(fs)
			return func(_ context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) == 0 {
					return usagef("validate needs at least one YAML file or folder")
				}
				var files []string
				for _, a := range args {
					if st, err := os.Stat(a); err != nil || !st.IsDir() {
						files = append(files, a) // validateFile reports a missing file
						continue
					}
					fs, err := testFiles([]string{a}) // a folder: its *.yaml and *.yml, as run reads it
					if err != nil {
						return usagef("validate: %v", err)
					}
					files = append(files, fs...)
				}
				o := config.LoadOptions{Resources: resources(mem, *out), Personalities: true, NoDPDK: !dumper.DPDKAvailable, Set: *sets}
				if *testbed != "" {
					tb, err := config.ParseTestbed(*testbed)
					if err != nil || *testbed != tb.String() {
						return usagef("validate: --testbed must be sim, netns or remote, not %q", *testbed)
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
		},
	})
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
