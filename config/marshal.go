package config

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Marshal returns the canonical YAML of t: every key written with lumina's
// spelling (num-qps, not num-connections; dumpers, not mirrors), defaults
// included, keys in a fixed order. For a Test returned by Parse,
// Parse(t.File, t.Marshal()) returns an equal Test, except for Event.Pos.
func (t *Test) Marshal() ([]byte, error) {
	root := mapping()
	add(root, "name", str(t.Name))
	add(root, "seed", scalar("!!int", strconv.FormatUint(t.Seed, 10)))
	add(root, "testbed", str(t.Testbed.String()))
	add(root, "iter-scope", str(t.IterScope.String()))
	add(root, "result-path", str(t.ResultPath))
	addStr(root, "local-workspace", t.LocalWorkspace)
	add(root, "aggregate-pcap-filename", str(t.AggregatePcapFilename))
	add(root, "num-repeats", num(t.NumRepeats))
	add(root, "rewrite-udp-dst-port", num(t.RewriteUDPDstPort))

	sw := mapping()
	addStr(sw, "sde-path", t.Switch.SDEPath)
	addStr(sw, "workspace", t.Switch.Workspace)
	addStr(sw, "control-ip", t.Switch.ControlIP)
	addStr(sw, "username", t.Switch.Username)
	addStr(sw, "ssh-key-filepath", t.Switch.SSHKeyFilepath)
	addStr(sw, "port-speed", t.Switch.PortSpeed)
	addStr(sw, "fec-type", t.Switch.FECType)
	add(sw, "listen-port", num(t.Switch.ListenPort))
	addStr(sw, "local-switch-config-path", t.Switch.LocalSwitchConfigPath)
	add(root, "switch", sw)

	add(root, "requester", marshalHost(&t.Requester))
	add(root, "responder", marshalHost(&t.Responder))

	ds := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for i := range t.Dumpers {
		ds.Content = append(ds.Content, marshalDumper(&t.Dumpers[i]))
	}
	add(root, "dumpers", ds)

	add(root, "traffic", marshalTraffic(&t.Traffic))

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	return buf.Bytes(), nil
}

func marshalHost(h *Host) *yaml.Node {
	m := mapping()
	addStr(m, "workspace", h.Workspace)
	addStr(m, "control-ip", h.ControlIP)
	addStr(m, "username", h.Username)
	addStr(m, "ssh-key-filepath", h.SSHKeyFilepath)

	nic := mapping()
	addStr(nic, "type", h.NIC.Type)
	addStr(nic, "personality", h.NIC.Personality)
	addStr(nic, "if-name", h.NIC.IfName)
	addStr(nic, "pci-addr", h.NIC.PCIAddr)
	addStr(nic, "ib-device", h.NIC.IBDevice)
	add(nic, "ib-port", num(h.NIC.IBPort))
	addNum(nic, "switch-port", h.NIC.SwitchPort)
	if len(h.NIC.IPList) > 0 {
		l := seq()
		for _, p := range h.NIC.IPList {
			l.Content = append(l.Content, str(p.String()))
		}
		add(nic, "ip-list", l)
	}
	if len(h.NIC.PrioDSCPMap) > 0 {
		pm := mapping()
		prios := make([]int, 0, len(h.NIC.PrioDSCPMap))
		for p := range h.NIC.PrioDSCPMap {
			prios = append(prios, p)
		}
		sort.Ints(prios)
		for _, p := range prios {
			l := seq()
			l.Style = yaml.FlowStyle
			for _, x := range h.NIC.PrioDSCPMap[p] {
				l.Content = append(l.Content, num(x))
			}
			pm.Content = append(pm.Content, num(p), l)
		}
		add(nic, "prio-dscp-map", pm)
	}
	add(m, "nic", nic)

	r := mapping()
	add(r, "dcqcn-rp-enable", boolean(h.RoCE.DCQCNRPEnable))
	add(r, "dcqcn-np-enable", boolean(h.RoCE.DCQCNNPEnable))
	add(r, "min-time-between-cnps", num(h.RoCE.MinTimeBetweenCNPs))
	add(r, "adaptive-retrans", boolean(h.RoCE.AdaptiveRetrans))
	add(r, "slow-restart", boolean(h.RoCE.SlowRestart))
	add(r, "dcqcn-enable", boolean(h.RoCE.DCQCNEnable))
	add(m, "roce-parameters", r)
	return m
}

func marshalDumper(dm *Dumper) *yaml.Node {
	m := mapping()
	add(m, "name", str(dm.Name))
	add(m, "weight", num(dm.Weight))
	add(m, "workers", num(dm.Workers))
	add(m, "backend", str(dm.Backend.String()))
	add(m, "snap-len", num(dm.SnapLen))
	add(m, "num-pkts", num(dm.NumPkts))
	add(m, "dump-filename", str(dm.DumpFilename))
	addStr(m, "control-ip", dm.ControlIP)
	addStr(m, "username", dm.Username)
	addStr(m, "ssh-key-filepath", dm.SSHKeyFilepath)
	addStr(m, "workspace", dm.Workspace)
	nic := mapping()
	addStr(nic, "type", dm.NIC.Type)
	addStr(nic, "if-name", dm.NIC.IfName)
	addStr(nic, "pci-addr", dm.NIC.PCIAddr)
	addNum(nic, "switch-port", dm.NIC.SwitchPort)
	addNum(nic, "rte-port-id", dm.NIC.RTEPortID)
	if len(nic.Content) > 0 {
		add(m, "nic", nic)
	}
	if len(dm.EALArgs) > 0 {
		l := seq()
		for _, a := range dm.EALArgs {
			l.Content = append(l.Content, str(a))
		}
		add(m, "eal-args", l)
	}
	return m
}

func marshalTraffic(tr *Traffic) *yaml.Node {
	m := mapping()
	if tr.Verb == VerbSendRead {
		add(m, "num-qps", str(fmt.Sprintf("%d,%d", tr.NumQPs-tr.NumReadQPs, tr.NumReadQPs)))
	} else {
		add(m, "num-qps", num(tr.NumQPs))
	}
	add(m, "rdma-verb", str(tr.Verb.String()))
	add(m, "num-msgs-per-qp", num(tr.NumMsgsPerQP))
	add(m, "mtu", num(tr.MTU))
	add(m, "message-size", num(tr.MessageSize))
	add(m, "listen-port", num(tr.ListenPort))
	add(m, "multi-gid", boolean(tr.MultiGID))
	add(m, "barrier-sync", boolean(tr.BarrierSync))
	add(m, "tx-depth", num(tr.TxDepth))
	add(m, "min-retransmit-timeout", num(tr.MinRetransmitTimeout))
	add(m, "max-retransmit-retry", num(tr.MaxRetransmitRetry))
	if len(tr.DSCPList) > 0 {
		l := seq()
		l.Style = yaml.FlowStyle
		for _, x := range tr.DSCPList {
			l.Content = append(l.Content, num(x))
		}
		add(m, "dscp-list", l)
	}
	if len(tr.Events) > 0 {
		l := seq()
		for _, ev := range tr.Events {
			e := mapping()
			add(e, "qpn", num(ev.QPN))
			if ev.PSN == AllPackets {
				add(e, "psn", str("all"))
			} else {
				add(e, "psn", num(ev.PSN))
			}
			add(e, "type", str(ev.Type.String()))
			add(e, "iter", num(ev.Iter))
			if ev.Msg != AllMessages {
				add(e, "msg", num(ev.Msg))
			}
			l.Content = append(l.Content, e)
		}
		add(m, "data-pkt-events", l)
	}
	return m
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }
func seq() *yaml.Node     { return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"} }

func scalar(tag, v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}

func str(s string) *yaml.Node {
	n := scalar("!!str", s)
	if strings.ContainsAny(s, "\n\r") || strings.TrimSpace(s) != s {
		// Keep exotic strings byte-exact through a round trip.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func num(i int) *yaml.Node      { return scalar("!!int", strconv.Itoa(i)) }
func boolean(b bool) *yaml.Node { return scalar("!!bool", strconv.FormatBool(b)) }

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, str(key), v)
}

func addStr(m *yaml.Node, key, v string) {
	if v != "" {
		add(m, key, str(v))
	}
}

func addNum(m *yaml.Node, key string, v int) {
	if v != 0 {
		add(m, key, num(v))
	}
}
