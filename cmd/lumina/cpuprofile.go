package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names the file a CPU profile of the whole command is
// written to (runtime/pprof's format, for go tool pprof). It is an
// environment variable rather than a flag so that every command, the
// agent and a lumina started by another program (a test, the lab) can be
// profiled alike; scripts/pgo.sh makes cmd/lumina/default.pgo, the
// profile the Go toolchain optimizes lumina with, from such profiles.
const cpuProfileEnv = "LUMINA_CPUPROFILE"

// startCPUProfile starts the CPU profile path names, when it is not
// empty, and returns the function that stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	w := &firstErrWriter{w: f}
	if err := pprof.StartCPUProfile(w); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: %s: %w", cpuProfileEnv, path, err)
	}
	return func() error {
		pprof.StopCPUProfile() // it has written the whole profile when it returns
		err := w.err
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", cpuProfileEnv, path, err)
		}
		return nil
	}, nil
}

// firstErrWriter keeps the first error of its writes: runtime/pprof
// ignores the errors of the writer it streams a CPU profile to.
type firstErrWriter struct {
	w   io.Writer
	err error
}

func (e *firstErrWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

// profiled is run with the CPU profile of cpuProfileEnv around it. An
// error of the profile (the file cannot be created or written) is the
// command's error when the command succeeded; after a failed command it
// is printed on stderr, and the command's error (and so its exit code)
// stands.
func profiled(path string, stderr io.Writer, run func() error) error {
	stop, err := startCPUProfile(path)
	if err != nil {
		return err
	}
	runErr := run()
	if err := stop(); err != nil {
		if runErr == nil {
			return err
		}
		fmt.Fprintf(stderr, "lumina: %v\n", err)
	}
	return runErr
}
