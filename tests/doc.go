// Package tests holds lumina's end-to-end scenario tests: a YAML test file
// goes through the lumina command, exactly as a user runs it (`lumina run
// -q -o DIR [--testbed netns|remote ...] FILE.yaml`), on each testbed, and
// the results it writes — the exit code, DIR/<test>/<repeat>/report.json,
// trace.pcap, config.yaml and the rest (docs/run.md) — are checked for
// exact behaviour. Tests of one package's internals stay with the package
// (orchestrator keeps the failure-injection tests that need its hooks).
//
// TestMain builds cmd/lumina once into a temporary directory and removes it
// afterwards. Run everything with
//
//	go test ./tests/
//
// On the sim testbed (virtual clock) every example under examples/ and the
// regression suites under examples/regression/ run in a few seconds. The
// netns and remote tests need root and iproute2 (`ip netns`); without them
// they skip with the reason (set LUMINA_REQUIRE_ALL=1 to make that a
// failure, as CI does). The remote testbed runs on internal/testlab's lab:
// namespaces as machines, real `lumina agent` and `lumina injector`
// processes over TCP with TLS and a token.
//
// wireshark_test.go runs tshark with the shipped dissector
// (contrib/wireshark/lumina.lua, docs/wireshark.md) on the traces of sim
// runs and checks each decoded field against lumina's own decoder; it needs
// tshark (apt-get install -y tshark) and skips without it.
//
// testdata/sim-traces.sha256 pins the trace of every example on sim (with
// its own seed), byte for byte: `sha256  <example name>` per line (FOLDER/NAME
// for the folders of examples/ that TestSimTraces lists, such as odp/).
// TestSimTraces compares fresh runs with it; after an intended change to
// the traces, rewrite it with
//
//	go test ./tests/ -run TestSimTraces -update
//
// TestDocs keeps README.md and docs/*.md true: it runs the lumina commands
// their code blocks show (a documented skip list names the others and why),
// checks their exit status, the output quoted in ```console blocks, and the
// numbers the docs quote that are the same on every machine (sim).
package tests
