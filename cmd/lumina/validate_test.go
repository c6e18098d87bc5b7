package main

import (
	"strings"
	"testing"

	"github.com/netlumina/lumina/dumper"
)

func validateCases() []cliCase {
	td := "../../config/testdata/"
	file := func(name, content string) func(*testing.T, string) {
		return func(t *testing.T, tmp string) { write(t, tmp, name, []byte(content)) }
	}
	cases := []cliCase{
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
		{name: "validate-testbed-netns", args: []string{"validate", "--testbed", "netns", "../../examples/quickstart.yaml"}},
		{name: "validate-testbed-sim", args: []string{"validate", "--testbed", "sim", "$TMP/dpdk.yaml"},
			setup: file("dpdk.yaml", "testbed: netns\ndumpers:\n  - {backend: dpdk, eal-args: [--no-pci]}\n")},
		// Issue #38: a netns traffic limit of weeks on the wall clock warns.
		{name: "validate-netns-limit", args: []string{"validate", "$TMP/slow.yaml"},
			setup: file("slow.yaml", "testbed: netns\nnetns-slowdown: 10000\ntraffic: {num-msgs-per-qp: 9}\n")},
		// Issue #31: the fabric form's errors, each at its line.
		{name: "validate-fabric-invalid", args: []string{"validate", "../../examples/fabric/invalid.yaml"}},
		{name: "validate-testbed-bad", args: []string{"validate", "--testbed", "hw", "../../examples/quickstart.yaml"}},
		// Issue #35: a pause of a priority no flow uses is valid, with a
		// warning on stderr (exit 0); a pause to a NIC without nic.pfc is
		// refused at its to, and lumina run runs nothing (exit 2).
		{name: "validate-pfc-warning", args: []string{"validate", "$TMP/prio0.yaml"}, setup: file("prio0.yaml", pfcPrio0YAML)},
		{name: "run-pfc-no-nic-pfc", args: []string{"run", "-q", "-o", "$TMP/out", "$TMP/nopfc.yaml"},
			setup: file("nopfc.yaml", "requester: {nic: {pfc: {priorities: [3]}}}\ntraffic:\n  dscp-list: [26]\n  pfc-events:\n    - {type: pause, to: responder, priority: 3}\n")},
		// Issue #38, point 12: what the run would fail on after starting.
		{name: "validate-not-runnable", args: []string{"validate", "$TMP/events.yaml", "$TMP/response.yaml", "$TMP/names.yaml"},
			setup: func(t *testing.T, tmp string) {
				file("events.yaml", "traffic:\n  num-msgs-per-qp: 65537\n  message-size: 1024\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: ecn}\n")(t, tmp)
				file("response.yaml", "traffic:\n  message-size: 4096\n  data-pkt-events:\n    - {qpn: 0, psn: all, type: drop, direction: response}\n")(t, tmp)
				file("names.yaml", "name: "+strings.Repeat("n", 256)+"\naggregate-pcap-filename: "+strings.Repeat("a", 241)+
					"\ndumpers:\n  - {name: "+strings.Repeat("d", 221)+"}\n  - {dump-filename: "+strings.Repeat("f", 226)+"}\n")(t, tmp)
			}},
	}
	if !dumper.DPDKAvailable {
		// Issue #38, point 12: backend dpdk on netns from a binary built
		// without it; --testbed netns keeps a file's dpdk backend.
		cases = append(cases, cliCase{name: "validate-dpdk-missing", args: []string{"validate", "--testbed", "netns", "$TMP/dpdk.yaml", "$TMP/remote.yaml"},
			setup: func(t *testing.T, tmp string) {
				file("dpdk.yaml", "testbed: netns\ndumpers:\n  - {backend: dpdk, eal-args: [--no-pci]}\n")(t, tmp)
				file("remote.yaml", "requester: {control-ip: a}\nresponder: {control-ip: b}\nswitch: {control-ip: c}\ndumpers:\n  - {backend: dpdk, control-ip: d}\n")(t, tmp)
			}})
	}
	return cases
}

// pfcPrio0YAML pauses priority 3 of both hosts while their QP runs on
// DSCP 0 (priority 0): examples/pause-reaction.yaml without its dscp-list.
const pfcPrio0YAML = `requester: {nic: {pfc: {priorities: [3]}}}
responder: {nic: {pfc: {priorities: [3]}}}
traffic:
  pfc-events:
    - {type: pause, to: requester, priority: 3, start-us: 20, duration-us: 200, interval-us: 20}
    - {type: pause, to: responder, priority: 3}
`
