package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is lumina's version when neither -ldflags nor the build's module
// information gives one (a test binary, or `go build -buildvcs=false` from
// a checkout). `go build -ldflags "-X main.version=V"` sets it, and then
// it wins over the module version.
var version = devVersion

// devVersion is version's default.
const devVersion = "0.1.0-dev"

// versionFlags: lumina version.
type versionFlags struct{}

func (*versionFlags) define(*flag.FlagSet) {}

func (*versionFlags) check(args []string) error {
	if len(args) != 0 {
		return usagef("version takes no arguments")
	}
	return nil
}

// runVersion prints one line: "lumina VERSION [(commit C, TIME[, modified])] GO OS/ARCH".
func runVersion(_ context.Context, _ *versionFlags, _ []string, stdout, _ io.Writer) error {
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(bi, version))
	return nil
}

// versionLine is lumina version's line for the build information bi (nil:
// none) and ldVersion, main.version.
//
// The version is ldVersion when -ldflags set it, else the main module's
// version as the go command stamped it (a tag, or a pseudo-version
// v0.0.0-TIME-COMMIT with "+dirty" for uncommitted changes; "(devel)"
// with -buildvcs=false), else devVersion. The parenthesis holds the VCS
// revision (12 hex digits), the commit time and "modified" (uncommitted
// changes), which go build records from a git checkout unless -buildvcs=false.
func versionLine(bi *debug.BuildInfo, ldVersion string) string {
	v := ldVersion
	var rev, at string
	modified := false
	if bi != nil {
		if mv := bi.Main.Version; v == devVersion && mv != "" && mv != "(devel)" {
			v = mv
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
				if len(rev) > 12 {
					rev = rev[:12]
				}
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var vcs []string
	if rev != "" {
		vcs = append(vcs, "commit "+rev)
	}
	if at != "" {
		vcs = append(vcs, at)
	}
	if modified {
		vcs = append(vcs, "modified")
	}
	line := "lumina " + v
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
