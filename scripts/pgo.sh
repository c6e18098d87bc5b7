#!/usr/bin/env bash
# scripts/pgo.sh — remakes cmd/lumina/default.pgo, the CPU profile the Go
# toolchain optimizes lumina with (profile-guided optimization,
# https://go.dev/doc/pgo: `go build ./cmd/lumina` and `go run ./cmd/lumina`
# use the default.pgo of the main package's directory; `-pgo=off` builds
# without it). Run it from anywhere after a change to the hot paths (the
# analyzers, the trace reader and merge, the sim); it takes about a minute
# and 400 MB of disk under $TMPDIR, removed at the end.
#
# The profile is of what lumina spends its CPU on in its main jobs, each in
# a lumina process of its own (LUMINA_CPUPROFILE, cmd/lumina/cpuprofile.go):
#   - `lumina run` of a sim test of 8 WRITE QPs of 1 MiB messages at MTU
#     1024 (about 2.1 M mirrored packets: the generator, the software
#     switch, the merge and the analysis while it merges);
#   - `lumina analyze --format json` of that run, on 1 and on 2 workers,
#     ten times each (the analysis pass alone, as a trace is re-analyzed);
#   - `lumina analyze -o` of it twice (report.html's graph data collected).
# The profiles are merged with `go tool pprof -proto`.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { printf '== %s %s\n' "$(date +%T)" "$*" >&2; }

say "build (without a profile)"
go build -pgo=off -o "$tmp/lumina" ./cmd/lumina

cat >"$tmp/pgo.yaml" <<'EOF'
name: pgo
keep-dumper-files: false
requester: {nic: {personality: cx5}}
responder: {nic: {personality: cx5}}
traffic: {num-qps: 8, rdma-verb: write, num-msgs-per-qp: 256, mtu: 1024, message-size: 1048576}
EOF

say "lumina run"
LUMINA_CPUPROFILE="$tmp/run.prof" "$tmp/lumina" run -q -o "$tmp/out" "$tmp/pgo.yaml" >/dev/null
dir="$tmp/out/pgo/0"
say "lumina analyze (json, 1 and 2 workers, ten times each)"
for i in $(seq 1 10); do
  for w in 1 2; do
    LUMINA_CPUPROFILE="$tmp/analyze-$w-$i.prof" "$tmp/lumina" analyze --workers "$w" --format json "$dir" >/dev/null
  done
done
say "lumina analyze -o (twice)"
for i in 1 2; do
  LUMINA_CPUPROFILE="$tmp/html-$i.prof" "$tmp/lumina" analyze -o "$tmp/html-$i" "$dir" >/dev/null
done

go tool pprof -proto "$tmp"/*.prof >"$tmp/default.pgo"
mv "$tmp/default.pgo" cmd/lumina/default.pgo
say "cmd/lumina/default.pgo: $(wc -c <cmd/lumina/default.pgo) bytes"
