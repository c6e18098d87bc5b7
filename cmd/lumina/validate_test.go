package main

import "testing"

func validateCases() []cliCase {
	td := "../../config/testdata/"
	file := func(name, content string) func(*testing.T, string) {
		return func(t *testing.T, tmp string) { write(t, tmp, name, []byte(content)) }
	}
	return []cliCase{
		{name: "validate-ok", args: []string{"validate", "../../examples/remote/listing2.yaml", td + "public-example.yaml"}},
		{name: "validate-typo", args: []string{"validate", td + "invalid-typo.yaml"}},
		{name: "validate-mixed", args: []string{"validate", "../../examples/remote/listing2.yaml", td + "invalid-qpn.yaml", td + "invalid-syntax.yaml", td + "invalid-semantics.yaml"}},
		{name: "validate-missing", args: []string{"validate", "$TMP/none.yaml"}},
		{name: "validate-no-args", args: []string{"validate"}},
		// Issue #17: names that would leave the results directory, a device
		// read without bound, and what lumina run would refuse.
		{name: "validate-path-escape", args: []string{"validate", "$TMP/esc.yaml", "$TMP/nul.yaml", "$TMP/files.yaml"},
			setup: func(t *testing.T, tmp string) {
				file("esc.yaml", "name: ../../x\n")(t, tmp)
				file("nul.yaml", "name: \"a\\0b\"\n")(t, tmp)
				file("files.yaml", "aggregate-pcap-filename: ../trace.pcap\ndumpers:\n  - {name: d/x}\n  - {dump-filename: \"d\\0.pcap\"}\n")(t, tmp)
			}},
		{name: "validate-dev-zero", args: []string{"validate", "/dev/zero"}},
		{name: "validate-dumper-memory", args: []string{"validate", "--memory-limit", "1GiB", "$TMP/mem.yaml"},
			setup: file("mem.yaml", "dumpers:\n  - num-pkts: 1073741824\n    snap-len: 9216\ntraffic: {num-qps: 1024, message-size: 1048576}\n")},
		{name: "validate-dumper-capacity", args: []string{"validate", "$TMP/cap.yaml"},
			setup: file("cap.yaml", "dumpers:\n  - num-pkts: 16383\ntraffic: {num-qps: 8, num-msgs-per-qp: 64, message-size: 1048576}\n")},
		{name: "validate-num-repeats", args: []string{"validate", "$TMP/rep.yaml"}, setup: file("rep.yaml", "num-repeats: 1000000\n")},
		{name: "validate-testbed-remote", args: []string{"validate", "--testbed", "remote", "../../examples/quickstart.yaml"}},
		{name: "validate-testbed-netns", args: []string{"validate", "--testbed", "netns", "../../examples/quickstart.yaml", "$TMP/dpdk.yaml"},
			setup: file("dpdk.yaml", "testbed: netns\ndumpers:\n  - {backend: dpdk, eal-args: [--no-pci]}\n")},
		{name: "validate-testbed-sim", args: []string{"validate", "--testbed", "sim", "$TMP/dpdk.yaml"},
			setup: file("dpdk.yaml", "testbed: netns\ndumpers:\n  - {backend: dpdk, eal-args: [--no-pci]}\n")},
		// Issue #38: a netns traffic limit of weeks on the wall clock warns.
		{name: "validate-netns-limit", args: []string{"validate", "$TMP/slow.yaml"},
			setup: file("slow.yaml", "testbed: netns\nnetns-slowdown: 10000\ntraffic: {num-msgs-per-qp: 9}\n")},
		{name: "validate-testbed-bad", args: []string{"validate", "--testbed", "hw", "../../examples/quickstart.yaml"}},
	}
}
