package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/netlumina/lumina/config"
)

func init() {
	register(&command{
		name: "validate", args: "FILE.yaml...",
		summary: "check test files: prints 'FILE: ok' or one 'FILE:LINE:COL: message' per error",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) error {
			return func(_ context.Context, args []string, stdout, _ io.Writer) error {
				if len(args) == 0 {
					return usagef("validate needs at least one YAML file")
				}
				bad := 0
				for _, path := range args {
					if err := validateFile(stdout, path); err != nil {
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

func validateFile(w io.Writer, path string) error {
	_, err := config.Load(path)
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
