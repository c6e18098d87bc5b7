package config

import (
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/generator"
)

// The tables below are the YAML schema: one section per YAML mapping, one
// key per row, in the order that Parse decodes and Marshal writes them.
// Parse takes from them the known keys of every mapping (anything else is
// an unknown key), the defaults, and how each value is decoded and checked;
// Marshal takes the keys, their order and which ones it leaves out. The
// decodeFuncs are in decode.go. docs/config.md has one key table per
// section, under the heading section.doc; TestSchemaDocs checks that it
// lists the same keys with the same defaults.

// section is one YAML mapping of a test file and the Go struct it fills in.
type section struct {
	doc   string       // heading of the section's key table in docs/config.md
	typ   reflect.Type // the struct that the keys fill in
	keys  []key
	names []string // the keys' names, for unknown-key checks
	// own is how many of keys (the first ones) the section's table in
	// docs/config.md lists; the others are those of the section it
	// inherits (sectInherit), listed in that one's table.
	own int
}

// key is one row of the schema: a YAML key and the Go field it sets.
type key struct {
	name  string     // the YAML key
	field string     // the Go field; "" for none (dec, or sub, then gets the section's struct)
	dec   decodeFunc // decodes a non-null value; nil: the mapping described by sub
	sub   *section   // the mapping (or list of mappings) that the value is
	def   any        // the default, set before decoding; nil: the zero value
	doc   string     // the default as docs/config.md writes it, if def does not say it
	req   bool       // the key is required
	omit  bool       // Marshal leaves the key out if it holds def or is an empty list or mapping
	// enc, if not nil, writes the value for Marshal from the section's struct
	// s; else Marshal writes the field by its Go type. Without field and enc
	// the key is never written (aliases, and keys that only check).
	enc func(s reflect.Value) *yaml.Node
}

// decodeFunc decodes v, the non-null value at path, into f, the key's
// field (or s if the key has none); s is the section's struct.
type decodeFunc func(d *decoder, v *yaml.Node, path string, f, s reflect.Value)

func sect[T any](doc string, keys []key) *section {
	s := &section{doc: doc, typ: reflect.TypeFor[T](), keys: keys, own: len(keys)}
	for _, k := range keys {
		s.names = append(s.names, k.name)
	}
	return s
}

// sectInherit is sect with, after keys, every key of base whose name
// keys do not take: a flow takes every key of traffic. T embeds base's
// struct, so that base's fields are T's (promoted) fields.
func sectInherit[T any](doc string, keys []key, base *section) *section {
	own := len(keys)
	all := append([]key(nil), keys...)
	for _, k := range base.keys {
		if !slices.ContainsFunc(keys, func(o key) bool { return o.name == k.name }) {
			all = append(all, k)
		}
	}
	s := sect[T](doc, all)
	s.own = own
	return s
}

// Keys that several sections share.
var (
	workspace  = key{name: "workspace", field: "Workspace", dec: decStr, omit: true}
	controlIP  = key{name: "control-ip", field: "ControlIP", dec: decStr, omit: true}
	username   = key{name: "username", field: "Username", dec: decStr, omit: true}
	sshKey     = key{name: "ssh-key-filepath", field: "SSHKeyFilepath", dec: decStr, omit: true}
	ifName     = key{name: "if-name", field: "IfName", dec: decStr, omit: true}
	pciAddr    = key{name: "pci-addr", field: "PCIAddr", dec: decStr, omit: true}
	switchPort = key{name: "switch-port", field: "SwitchPort", dec: ints(0, 511, ""), omit: true}
	snapLen    = key{name: "snap-len", field: "SnapLen", dec: ints(64, 9216, ""), def: 128}
	numPkts    = key{name: "num-pkts", field: "NumPkts", dec: ints(1, 1<<40, ""), omit: true, doc: "no limit (the disk is)"}
	dumpFile   = key{name: "dump-filename", field: "DumpFilename", dec: decFile, doc: "`<name>.pcap`"}
)

var topSection = sect[Test]("Top level", []key{
	{name: "name", field: "Name", dec: decTestName, doc: "file base name without extension"},
	{name: "seed", field: "Seed", dec: decSeed, def: 1},
	{name: "testbed", field: "Testbed", dec: oneOf(testbedNames), doc: "`remote` if a traffic host or `switch` has a `control-ip`, else `sim`"},
	{name: "iter-scope", field: "IterScope", dec: oneOf(iterScopeNames)},
	{name: "result-path", field: "ResultPath", dec: decPath, def: "results"},
	{name: "local-workspace", field: "LocalWorkspace", dec: decStr, omit: true},
	{name: "aggregate-pcap-filename", field: "AggregatePcapFilename", dec: decFile, def: "trace.pcap"},
	{name: "num-repeats", field: "NumRepeats", dec: ints(1, MaxRepeats, ""), def: 1},
	{name: "keep-dumper-files", field: "KeepDumperFiles", dec: decBool, def: true},
	{name: "netns-slowdown", field: "NetnsSlowdown", dec: ints(1, MaxNetnsSlowdown, ""), def: 1},
	{name: "rewrite-udp-dst-port", field: "RewriteUDPDstPort", dec: decRewritePort, def: 9741},
	{name: "switch", field: "Switch", sub: switchSection, enc: encSwitch},
	{name: "switches", field: "Switches", dec: decSwitches, enc: encSwitches, doc: "absent (one switch, `switch`)"},
	{name: "links", field: "Links", sub: linkSection, dec: decLinks, omit: true, doc: "none (required with `switches`)"},
	{name: "routing", field: "Routing", dec: oneOf(routingNames), omit: true, doc: "`shortest` (`switches` only)"},
	{name: "requester", field: "Requester", sub: hostSection, enc: encTwoHost("Requester", hostSection)},
	{name: "responder", field: "Responder", sub: hostSection, enc: encTwoHost("Responder", hostSection)},
	{name: "requester-mirror", sub: mirrorSection, dec: decMirror},
	{name: "responder-mirror", sub: mirrorSection, dec: decMirror},
	{name: "dumpers", field: "Dumpers", sub: dumperSection, dec: decDumpers, doc: "two dumpers `dumper-0`, `dumper-1`"},
	{name: "traffic", field: "Traffic", sub: trafficSection, enc: encTwoHost("Traffic", trafficSection)},
	{name: "hosts", field: "Hosts", dec: decHosts, enc: encHosts, doc: "absent (the two-host form)"},
	{name: "flows", field: "Flows", sub: flowSection, dec: decFlows, enc: encFlows, doc: "absent (the two-host form)"},
	{name: "pfc-events", field: "PFCEvents", sub: pfcEventSection, dec: decPFCEvents, enc: encTopPFCEvents, doc: "none (hosts form only)"},
	{name: "deadlock-ms", field: "DeadlockMs", dec: ints(1, MaxDeadlockMs, "(deadlock-ms: how long the switches run on after the last flow ended)"), omit: true, doc: "absent (no deadlock check)"},
})

var switchSection = sect[Switch]("`switch`", []key{
	{name: "sde-path", field: "SDEPath", dec: decStr, omit: true},
	workspace, controlIP, username, sshKey,
	{name: "port-speed", field: "PortSpeed", dec: oneOf(portSpeeds), omit: true, doc: "empty (target default)"},
	{name: "fec-type", field: "FECType", dec: oneOf(fecTypes), omit: true, doc: "empty (target default)"},
	{name: "listen-port", field: "ListenPort", dec: ints(1, 65535, ""), def: 9000},
	{name: "local-switch-config-path", field: "LocalSwitchConfigPath", dec: decStr, omit: true},
	{name: "timestamp-uncertainty-ns", field: "TimestampUncertaintyNs", dec: ints(0, 1_000_000_000, ""), omit: true},
	{name: "timestamp-tolerance-ns", field: "TimestampToleranceNs", dec: ints(0, 1_000_000_000, ""), omit: true},
	{name: "pfc-watchdog", field: "PFCWatchdog", sub: pfcWatchdogSection, dec: decPFCWatchdog, omit: true, doc: "absent (no switch watchdog)"},
	{name: "ecn", field: "ECN", sub: ecnSection, dec: decECN, omit: true, doc: "absent (no marking by queue depth)"},
})

var ecnSection = sect[ECN]("`ecn` (`switch`)", []key{
	{name: "priorities", field: "Priorities", req: true, dec: decPriorities},
	{name: "kmin-kb", field: "KminKB", req: true, dec: ints(0, MaxECNKB, "(kmin-kb: KiB of egress queue up to which nothing is marked)")},
	{name: "kmax-kb", field: "KmaxKB", req: true, dec: ints(1, MaxECNKB, "(kmax-kb: KiB of egress queue above which every packet is marked)")},
	{name: "pmax", field: "Pmax", req: true, dec: decPmax},
})

// MaxECNKB bounds switch.ecn's kmin-kb and kmax-kb: 1 GiB of queue, far
// beyond any switch buffer.
const MaxECNKB = 1 << 20

var hostSection = sect[Host]("`requester` / `responder` / `hosts`", []key{
	workspace, controlIP, username, sshKey,
	{name: "nic", field: "NIC", sub: hostNICSection},
	{name: "roce-parameters", field: "RoCE", sub: roceSection},
})

var hostNICSection = sect[NIC]("`nic` (traffic hosts)", []key{
	{name: "type", field: "Type", dec: decHostNICType, omit: true},
	{name: "personality", field: "Personality", dec: decPersonality, omit: true, doc: "`type` if it is cx4/cx5/cx6, else `spec`"},
	ifName, pciAddr,
	{name: "ib-device", field: "IBDevice", dec: decStr, omit: true},
	{name: "ib-port", field: "IBPort", dec: ints(1, 255, ""), def: 1},
	switchPort,
	{name: "ip-list", field: "IPList", dec: decIPList, omit: true},
	{name: "prio-dscp-map", field: "PrioDSCPMap", dec: decPrioDSCPMap, omit: true, doc: "empty (priority p ↔ DSCP 8p..8p+7)"},
	{name: "pfc", field: "PFC", sub: pfcSection, dec: decPFC, omit: true, doc: "absent (PFC off)"},
	{name: "odp", field: "ODP", sub: odpSection, dec: decODP, omit: true, doc: "absent (pinned memory)"},
})

var roceSection = sect[RoCEParameters]("`roce-parameters`", []key{
	{name: "dcqcn-rp-enable", field: "DCQCNRPEnable", dec: decBool, def: true},
	{name: "dcqcn-np-enable", field: "DCQCNNPEnable", dec: decBool, def: true},
	{name: "min-time-between-cnps", field: "MinTimeBetweenCNPs", dec: ints(0, inf, ""), def: 4},
	{name: "adaptive-retrans", field: "AdaptiveRetrans", dec: decBool},
	{name: "slow-restart", field: "SlowRestart", dec: decBool},
	{name: "dcqcn-enable", field: "DCQCNEnable", dec: decBool, def: true},
})

var dumperSection = sect[Dumper]("`dumpers`", []key{
	{name: "name", field: "Name", dec: decDumperName, doc: "`dumper-<i>` (0-based index)"},
	{name: "weight", field: "Weight", dec: ints(1, 255, ""), def: 1},
	{name: "workers", field: "Workers", dec: ints(1, maxWorkers, ""), def: 1},
	{name: "backend", field: "Backend", dec: oneOf(backendNames), doc: "`sim` on testbed `sim`, else `afpacket`"},
	snapLen, numPkts, dumpFile,
	controlIP, username, sshKey, workspace,
	{name: "nic", field: "NIC", sub: dumperNICSection, omit: true},
	{name: "eal-args", field: "EALArgs", dec: decEALArgs, omit: true},
})

var dumperNICSection = sect[NIC]("`nic` (dumpers)", []key{
	{name: "type", field: "Type", dec: oneOf(dumperNICTypes), omit: true},
	ifName, pciAddr, switchPort,
	{name: "rte-port-id", field: "RTEPortID", dec: ints(0, 1023, ""), omit: true},
})

// mirrorSection is the public tool's requester-mirror and responder-mirror:
// each becomes one dumper.
var mirrorSection = sect[Dumper]("`requester-mirror` / `responder-mirror`", []key{
	workspace, controlIP, username, sshKey,
	{name: "pkt-dump-conf", sub: pktDumpSection},
	{name: "nic", field: "NIC", sub: dumperNICSection},
})

var pktDumpSection = sect[Dumper]("`pkt-dump-conf`", []key{dumpFile, snapLen, numPkts})

var trafficSection = sect[Traffic]("`traffic`", []key{
	{name: "num-qps", field: "NumQPs", dec: decNumQPs, def: 1, enc: encNumQPs, doc: "`1` (`\"1,1\"` with `send_read`)"},
	{name: "num-connections", dec: decNumQPs},
	{name: "rdma-verb", field: "Verb", dec: oneOf(verbNames), def: string(VerbWrite)},
	{name: "num-msgs-per-qp", field: "NumMsgsPerQP", dec: ints(1, 1<<31-1, ""), def: 1},
	{name: "mtu", field: "MTU", dec: decMTU, def: defaultMTU},
	{name: "message-size", field: "MessageSize", dec: ints(0, 1<<31, ""), def: 4096},
	{name: "listen-port", field: "ListenPort", dec: ints(1, 65535, ""), def: 12345},
	{name: "multi-gid", field: "MultiGID", dec: decBool},
	{name: "barrier-sync", field: "BarrierSync", dec: decBool},
	{name: "tx-depth", field: "TxDepth", dec: ints(1, inf, ""), def: 1},
	{name: "min-retransmit-timeout", field: "MinRetransmitTimeout", dec: ints(0, 31, ""), def: generator.DefaultTimeout},
	{name: "max-retransmit-retry", field: "MaxRetransmitRetry", dec: ints(0, 7, ""), def: generator.DefaultRetryCnt},
	{name: "min-rnr-timer", field: "MinRNRTimer", dec: ints(0, 31, "(min-rnr-timer: the IBA encoding, 14 is 1.28 ms)"), def: generator.DefaultMinRNRTimer, omit: true},
	{name: "rnr-retry", field: "RNRRetry", dec: ints(0, 7, "(rnr-retry: 7 is infinite)"), def: generator.DefaultRNRRetry, omit: true},
	{name: "post-interval-us", field: "PostIntervalUs", dec: ints(0, MaxPostIntervalUs, "(post-interval-us: µs between posting successive messages of a QP)"), omit: true, doc: "`0` (back to back)"},
	{name: "dscp-list", field: "DSCPList", dec: decDSCPList, omit: true},
	{name: "data-pkt-events", field: "Events", sub: eventSection, dec: decEvents, omit: true},
	{name: "pfc-events", field: "PFCEvents", sub: pfcEventSection, dec: decPFCEvents, omit: true},
})

// flowSection is one entry of flows: its own keys, then every key of
// traffic but pfc-events (top level in the hosts form).
var flowSection = sectInherit[Flow]("`flows`", []key{
	{name: "name", field: "Name", req: true, dec: decEntityName},
	{name: "from", field: "From", req: true, dec: decHostRef},
	{name: "to", field: "To", req: true, dec: decHostRef},
	{name: "start-us", field: "StartUs", dec: ints(0, MaxStartUs, "(start-us: µs after traffic starts)"), omit: true},
	{name: "path", field: "Path", dec: decFlowPath, omit: true, doc: "the route of `routing` (`switches` only)"},
	{name: "pfc-events", dec: decFlowPFCEvents, doc: "– (refused: top level in the hosts form)"},
}, trafficSection)

// MaxStartUs bounds a flow's start-us and a PFC event's start-us and
// duration-us: an hour.
const MaxStartUs = 3_600_000_000

var eventSection = sect[Event]("Events", []key{
	{name: "qpn", field: "QPN", req: true, dec: ints(0, inf, "(qpn is the 0-based QP index)")},
	{name: "psn", field: "PSN", req: true, dec: decPSN, enc: encPSN},
	{name: "type", field: "Type", req: true, dec: decEventType},
	{name: "iter", field: "Iter", def: 1, dec: ints(1, inf, "(iter is the 1-based transmission round: 1 is the first transmission)")},
	{name: "msg", field: "Msg", def: AllMessages, omit: true, dec: decMsg, doc: "every message"},
	{name: "packet", dec: decPacket, doc: "`data`"},
	{name: "direction", field: "Direction", dec: oneOf(directionNames), omit: true, doc: "`data`"},
	{name: "delay-us", field: "DelayUs", dec: ints(1, maxHoldUs, "(delay-us is the hold in µs; the switch counts 32-bit ns)"), omit: true, doc: "– (required with `type: delay`)"},
	{name: "overtakers", field: "Overtakers", dec: ints(1, 255, "(overtakers: later packets of the QP that pass the held one)"), omit: true, doc: "– (required with `type: reorder`)"},
	{name: "max-hold-us", field: "MaxHoldUs", dec: ints(1, maxHoldUs, "(max-hold-us bounds a reorder hold in µs)"), omit: true, doc: "`1000` with `type: reorder`"},
	{name: "copies", field: "Copies", dec: ints(1, 255, "(copies: identical copies after the packet)"), omit: true, doc: "– (required with `type: duplicate`)"},
	{name: "at", field: "At", dec: decSwitchRef, omit: true, doc: "the flow's observed switch (`switches` only)"},
})

// maxHoldUs is the longest hold the switch's 32-bit ns parameters express.
const maxHoldUs = (1<<32 - 1) / 1000

var directionNames = []string{"data", "response", "request"}

// value returns the value of k's field in s, the section's struct, or s
// itself if k has no field.
func (k *key) value(s reflect.Value) reflect.Value {
	if k.field == "" {
		return s
	}
	return s.FieldByName(k.field)
}

// defValue returns k's default as a value of type t.
func (k *key) defValue(t reflect.Type) reflect.Value {
	if k.def == nil {
		return reflect.Zero(t)
	}
	return reflect.ValueOf(k.def).Convert(t)
}

// setDefaults sets the defaults of sec's keys, and of its sub-mappings, in s.
func setDefaults(sec *section, s reflect.Value) {
	for _, k := range sec.keys {
		if k.field == "" {
			continue
		}
		f := s.FieldByName(k.field)
		if k.def != nil {
			f.Set(k.defValue(f.Type()))
		}
		if k.sub != nil && f.Kind() == reflect.Struct {
			setDefaults(k.sub, f)
		}
	}
}

// ptr returns the address of v, which holds a T.
func ptr[T any](v reflect.Value) *T { return v.Addr().Interface().(*T) }

// section decodes the mapping n at path into s, a struct of sec.typ: it
// reports unknown keys and missing required ones, then decodes each given
// key in table order. It returns false if n is not a mapping.
func (d *decoder) section(n *yaml.Node, path string, sec *section, s reflect.Value) bool {
	m := d.object(n, path, sec.names)
	if m == nil {
		return false
	}
	for _, k := range sec.keys {
		if kp := join(path, k.name); k.req && m[k.name] == nil {
			if d.nodes[kp] != nil {
				d.errorf(d.nodes[kp], "%s: required, got null", k.name)
			} else {
				d.errorf(n, "missing key %q in %s", k.name, path)
			}
			d.bad[path] = true
		}
	}
	for _, k := range sec.keys {
		switch v := m[k.name]; {
		case v == nil:
		case k.dec != nil:
			k.dec(d, v, join(path, k.name), k.value(s), s)
		default:
			d.section(v, join(path, k.name), k.sub, k.value(s))
		}
	}
	return true
}
