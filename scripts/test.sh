#!/usr/bin/env bash
# scripts/test.sh — lumina's whole test suite, the command CI runs (.ci/run).
#
# Installs what the tests need with apt when run as root (tshark now), then:
# gofmt check, go vet, staticcheck, go test -race, and a short smoke run of
# every fuzz target. As root, a test that would skip for a missing requirement
# fails instead (LUMINA_REQUIRE_ALL=1): CI must run everything.
#
# Environment: FUZZTIME (default 20000x: executions, not seconds) per fuzz
# target, FUZZMINIMIZETIME (default 100x) per new input; SKIP_FUZZ=1 skips
# them. Budgets are counts because Go 1.26's fuzz coordinator can fail a
# target with "context deadline exceeded" when a duration -fuzztime expires
# (go.dev/issue/75804, fixed in Go 1.27), and a duration-bounded
# minimisation (60 s by default) can use a whole smoke run on one input.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '== %s %s\n' "$(date +%T)" "$*" >&2; }

need=()
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v tcpdump >/dev/null 2>&1 || need+=(tcpdump)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v zsh >/dev/null 2>&1 || need+=(zsh)    # lumina completion zsh|fish
command -v fish >/dev/null 2>&1 || need+=(fish)
pkg-config --exists libdpdk 2>/dev/null || need+=(libdpdk-dev)
pkg-config --exists libibverbs 2>/dev/null || need+=(libibverbs-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    say "missing ${need[*]}: the tests that need them will skip (run as root to install)"
  fi
fi
if [ "$(id -u)" = 0 ]; then
  export LUMINA_REQUIRE_ALL="${LUMINA_REQUIRE_ALL:-1}"
fi
# Everything here is built without cmd/lumina/default.pgo, the profile `go
# build ./cmd/lumina` optimizes lumina with (scripts/pgo.sh): it changes
# which calls the compiler inlines, not what the code does, and with it
# every package lumina imports would be compiled twice more (plain and
# -race, with the profile), minutes of CI's budget. TestDefaultPGO checks
# that the profile is one the compiler reads.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-pgo=off"

say "gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then
  echo "gofmt would change:" >&2
  echo "$bad" >&2
  exit 1
fi

say "go vet"
go vet ./...

say "go build/vet -tags verbs"
go build -tags verbs ./...
go vet -tags verbs ./...

# staticcheck from PATH, else from GOBIN/GOPATH's bin, else installed there.
staticcheck=$(command -v staticcheck 2>/dev/null || true)
if [ -z "$staticcheck" ]; then
  gobin=$(go env GOBIN)
  [ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
  staticcheck="$gobin/staticcheck"
  if [ ! -x "$staticcheck" ]; then
    say "installing staticcheck"
    go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
  fi
fi
say "staticcheck ($("$staticcheck" -version))"
"$staticcheck" ./...
"$staticcheck" -tags verbs ./...

say "go test -race"
# The longest packages first (go test runs them in this order, two at a
# time on two cores): the end-to-end tests alone take about five minutes,
# mostly in real time (netns, remote), and would otherwise start last and
# run with nothing beside them.
go test -race -count=1 ./tests/ ./analyzers/ ./orchestrator/ ./collie/ ./cmd/lumina/ ./lab/ ./dumper/ ./...

say "go test -tags verbs (the libibverbs layer against the installed headers)"
go test -count=1 -tags verbs ./generator/verbs/ ./nic/

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  fuzztime="${FUZZTIME:-20000x}"
  minimize="${FUZZMINIMIZETIME:-100x}"
  # Every "func FuzzX(" in a _test.go file, run alone in its package.
  grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
    pkg="./$(dirname "${file#./}")"
    grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r fn; do
      say "fuzz $pkg $fn ($fuzztime)"
      go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" -parallel 1 "$pkg" >/tmp/lumina-fuzz.log 2>&1 || {
        cat /tmp/lumina-fuzz.log >&2
        exit 1
      }
    done
  done
fi
say "all tests passed"
