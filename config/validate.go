package config

import (
	"fmt"
	"strings"
)

// resolve fills in the defaults that depend on other keys.
func (d *decoder) resolve(t *Test) {
	if t.Name == "" {
		t.Name = defaultName(d.file)
	}
	if d.keys["hosts"] != nil {
		t.HostsForm = true
		t.Requester, t.Responder, t.Traffic = Host{}, Host{}, Traffic{}
	}
	hosts := []*Host{&t.Requester, &t.Responder}
	traffic := []*Traffic{&t.Traffic}
	if t.HostsForm {
		hosts, traffic = nil, nil
		for i := range t.Hosts {
			hosts = append(hosts, &t.Hosts[i].Host)
		}
		for i := range t.Flows {
			traffic = append(traffic, &t.Flows[i].Traffic)
		}
	}
	if !d.given("testbed") || d.bad["testbed"] {
		t.Testbed = TestbedSim
		if t.Switch.ControlIP != "" {
			t.Testbed = TestbedRemote
		}
		for _, h := range hosts {
			if h.ControlIP != "" {
				t.Testbed = TestbedRemote
			}
		}
	}
	for _, h := range hosts {
		if h.NIC.Personality == "" {
			h.NIC.Personality = "spec"
			switch h.NIC.Type {
			case "cx4", "cx5", "cx6":
				h.NIC.Personality = h.NIC.Type
			}
		}
	}
	for _, tr := range traffic {
		if tr.Verb == VerbSendRead && tr.NumReadQPs == 0 {
			tr.NumQPs, tr.NumReadQPs = 2, 1 // num-qps "1,1"
		}
	}
	if len(t.Dumpers) == 0 && !d.dumpersGiven {
		for i := 0; i < defaultNumDumpers; i++ {
			t.Dumpers = append(t.Dumpers, newDumper(fmt.Sprintf("dumper-%d", i)))
		}
	}
	for i := range t.Dumpers {
		dm := &t.Dumpers[i]
		if !d.backendSet(i) {
			dm.Backend = BackendSim
			if t.Testbed != TestbedSim {
				dm.Backend = BackendAFPacket
			}
		}
		if dm.DumpFilename == "" {
			dm.DumpFilename = dm.Name + ".pcap"
		}
	}
	if len(t.Switches) > 0 {
		t.Switch = t.Switches[0].Switch
		if t.Routing == "" {
			t.Routing = RoutingShortest
		}
	}
	t.Normalize()
}

// dumperPath returns the path prefix of dumper i's keys.
func (d *decoder) dumperPath(i int) string {
	if len(d.mirrors) > 0 {
		if i < len(d.mirrors) {
			return d.mirrors[i]
		}
		return ""
	}
	if d.dumpersGiven {
		return fmt.Sprintf("dumpers[%d]", i)
	}
	return ""
}

// backendSet reports whether the file gave dumper i a valid backend.
func (d *decoder) backendSet(i int) bool {
	p := d.dumperPath(i) + ".backend"
	return d.given(p) && !d.bad[p]
}

// validate runs the checks that involve more than one key.
func (d *decoder) validate(t *Test) {
	d.validateForm(t)
	d.validateHosts(t)
	d.validateFlows(t)
	d.validateFabric(t)
	d.validateECN(t)
	d.validateTestbed(t)
	d.validateDumpers(t)
	d.validateNameLengths(t)
	expanded, over := 0, false // over: a flow alone is over the limit (and said so)
	for f := range t.Flows {
		n := d.validateTraffic(t, f)
		expanded += n
		over = over || n > maxExpandedEvents
	}
	if t.HostsForm && expanded > maxExpandedEvents && !over {
		d.errorAt(d.firstPos("flows"), fmt.Sprintf("the flows' data-pkt-events expand to more than %d (event, message, packet) entries in all, the switch's event table; give msg, or fewer psn: all events", maxExpandedEvents))
	}
	d.validatePFC(t)
}

// firstPos returns the first known position among paths, or 1:1.
func (d *decoder) firstPos(paths ...string) Pos {
	for _, p := range paths {
		if pos := d.pos(p); pos.Line > 0 {
			return pos
		}
	}
	return Pos{1, 1}
}

func (d *decoder) validateTestbed(t *Test) {
	if t.Testbed != TestbedRemote || d.bad["testbed"] {
		return
	}
	// Where to point: the testbed key if given, else the control-ip that
	// selected the remote testbed.
	paths := []string{"testbed"}
	for i := range t.Hosts {
		paths = append(paths, hostPath(t, i)+".control-ip")
	}
	at := d.firstPos(append(paths, "switch.control-ip")...)
	for _, p := range controlIPProblems(t) {
		if !d.bad[p.host] {
			d.errorAt(at, "testbed remote: "+p.msg)
		}
	}
	if t.NetnsSlowdown > 1 && !d.bad["netns-slowdown"] {
		d.errorAt(d.firstPos("netns-slowdown"), "testbed remote: "+slowdownOnRemote(t.NetnsSlowdown))
	}
	if len(d.mirrors) == 0 && !d.dumpersGiven {
		d.errorAt(at, "testbed remote: the dumpers need control-ips: add dumpers (or requester-mirror and responder-mirror) with control-ip")
		return
	}
	for i, dm := range t.Dumpers {
		p := d.dumperPath(i)
		if dm.ControlIP == "" && p != "" && !d.bad[p] {
			d.errorAt(d.firstPos(p), fmt.Sprintf("testbed remote: dumper %q has no control-ip", dm.Name))
		}
	}
}

func (d *decoder) validateDumpers(t *Test) {
	names := map[string]Pos{}
	files := map[string]Pos{}
	for i, dm := range t.Dumpers {
		p := d.dumperPath(i)
		if p == "" {
			continue
		}
		first, dupName := names[dm.Name]
		if dupName {
			d.errorAt(d.firstPos(p+".name", p), fmt.Sprintf("duplicate dumper name %q (first at %s)", dm.Name, first))
		} else {
			names[dm.Name] = d.firstPos(p+".name", p)
		}
		fp := d.firstPos(p+".dump-filename", p+".pkt-dump-conf.dump-filename", p)
		// With a duplicate name, a clash of the default file names, which
		// derive from the names, would only repeat the same error.
		if first, dup := files[dm.DumpFilename]; dup && !dupName {
			d.errorAt(fp, fmt.Sprintf("dump-filename %q is already used by another dumper (at %s)", dm.DumpFilename, first))
		} else if dm.DumpFilename == t.AggregatePcapFilename {
			d.errorAt(fp, fmt.Sprintf("dump-filename %q is also the aggregate-pcap-filename", dm.DumpFilename))
		} else if !dup {
			files[dm.DumpFilename] = fp
		}
		if d.backendSet(i) && !d.bad["testbed"] {
			bp := d.firstPos(p + ".backend")
			if t.Testbed == TestbedSim && dm.Backend != BackendSim {
				d.errorAt(bp, fmt.Sprintf("backend %s needs a real network: testbed sim only supports backend sim", dm.Backend))
			}
			if t.Testbed != TestbedSim && dm.Backend == BackendSim {
				d.errorAt(bp, fmt.Sprintf("backend sim only works on testbed sim, not %s; use afpacket or dpdk", t.Testbed))
			}
		}
		if len(dm.EALArgs) > 0 && dm.Backend != BackendDPDK {
			d.errorAt(d.firstPos(p+".eal-args"), fmt.Sprintf("eal-args are only used by backend dpdk, not %s", dm.Backend))
		}
	}
}

// checkBinary refuses what the binary that runs t cannot do (o.NoDPDK):
// backend dpdk on netns, whose dumpers run in this binary (on remote, the
// agents' binaries decide for themselves).
func (d *decoder) checkBinary(t *Test, o LoadOptions) {
	if !o.NoDPDK || t.Testbed != TestbedNetns {
		return
	}
	for i, dm := range t.Dumpers {
		if dm.Backend == BackendDPDK {
			d.errorAt(d.firstPos(d.dumperPath(i)+".backend", d.dumperPath(i)),
				"backend dpdk: this lumina was built without it (build with go build -tags dpdk, on Linux with cgo and libdpdk-dev); use backend afpacket")
		}
	}
}

// File name limits: a file name has at most 255 bytes (NAME_MAX on Linux),
// and lumina derives names from the test's: a dumper writes
// ".dumperNN-<dump-filename>.wNNN.tmp-NNNNNNNNNN" while it runs (30 bytes
// more), the merge ".<aggregate-pcap-filename>.tmpNNNNNNNNNN" (15 more).
const (
	maxFileName      = 255
	maxDumpFilename  = maxFileName - 30
	maxAggregateName = maxFileName - 15
)

// validateNameLengths refuses names that would make file names longer
// than the file system allows: the run would fail with "file name too
// long" after starting.
func (d *decoder) validateNameLengths(t *Test) {
	long := func(at Pos, what string, n, limit int, why string) {
		d.errorAt(at, fmt.Sprintf("%s is %d bytes, want at most %d (%s)", what, n, limit, why))
	}
	if n := len(t.Name); n > maxFileName && !d.bad["name"] {
		long(d.firstPos("name"), "name", n, maxFileName, "it names the results directory of the test")
	}
	if n := len(t.AggregatePcapFilename); n > maxAggregateName && !d.bad["aggregate-pcap-filename"] {
		long(d.firstPos("aggregate-pcap-filename"), "aggregate-pcap-filename", n, maxAggregateName, "the merge writes it under a temporary name 15 bytes longer")
	}
	for i, dm := range t.Dumpers {
		p := d.dumperPath(i)
		n := len(dm.DumpFilename)
		if p == "" || n <= maxDumpFilename || d.bad[p] {
			continue
		}
		why := "the dumper writes it under a temporary name 30 bytes longer"
		fp := d.pos(p + ".dump-filename")
		if fp.Line == 0 {
			fp = d.pos(p + ".pkt-dump-conf.dump-filename")
		}
		if fp.Line > 0 {
			long(fp, "dump-filename", n, maxDumpFilename, why)
		} else {
			long(d.firstPos(p+".name", p), "the default dump-filename <name>.pcap", n, maxDumpFilename, why+"; give a shorter name or dump-filename")
		}
	}
}

// validateTraffic checks the keys of flow f's traffic (traffic in the
// two-host form) that involve each other, and returns how many entries
// its valid events expand to (counting stops above maxExpandedEvents).
func (d *decoder) validateTraffic(t *Test, f int) int {
	tr := &t.Flows[f].Traffic
	fp := flowPath(t, f)
	if d.bad[fp] {
		return 0
	}
	qpsOK := !d.bad[fp+".num-qps"]
	if n := len(tr.DSCPList); n > 0 && qpsOK && !d.bad[fp+".dscp-list"] && n != tr.NumQPs {
		d.errorAt(d.pos(fp+".dscp-list"), fmt.Sprintf("dscp-list: want %d entries (one per QP; num-qps is %d), got %d", tr.NumQPs, tr.NumQPs, n))
	}
	ppmOK := !d.bad[fp+".mtu"] && !d.bad[fp+".message-size"]
	msgsOK := !d.bad[fp+".num-msgs-per-qp"]
	txOK := !d.bad[fp+".tx-depth"] && !d.bad["iter-scope"]
	ppm := tr.PacketsPerMessage()
	good := make([]bool, len(tr.Events))
	evOK := d.evOK[fp+".data-pkt-events"]
	expanded := 0
	for i, ev := range tr.Events {
		if i >= len(evOK) || !evOK[i] {
			continue
		}
		path := fmt.Sprintf("%s.data-pkt-events[%d]", fp, i)
		good[i] = true
		if qpsOK && ev.QPN >= tr.NumQPs {
			d.errorAt(d.pos(path+".qpn"), fmt.Sprintf("qpn: want 0..%d, got %d (num-qps is %d); qpn is 0-based; the paper's Listing 2 counts from 1",
				tr.NumQPs-1, ev.QPN, tr.NumQPs))
			good[i] = false
		}
		if ppmOK && ev.PSN != AllPackets && ev.PSN >= ppm {
			d.errorAt(d.pos(path+".psn"), fmt.Sprintf("psn: want 0..%d or \"all\", got %d (a message of %d bytes at mtu %d is %s; psn is the 0-based packet index within a message)",
				ppm-1, ev.PSN, tr.MessageSize, tr.MTU, plural(ppm, "packet")))
			good[i] = false
		}
		if msgsOK && ev.Msg != AllMessages && ev.Msg >= tr.NumMsgsPerQP {
			d.errorAt(d.pos(path+".msg"), fmt.Sprintf("msg: want 0..%d, got %d (num-msgs-per-qp is %d; msg is 0-based)",
				tr.NumMsgsPerQP-1, ev.Msg, tr.NumMsgsPerQP))
			good[i] = false
		}
		if !d.checkEventParams(tr, &ev, fp, path) {
			good[i] = false
		}
		if ppmOK && ev.Direction == DirResponse && ev.PSN == AllPackets && ppm > 1 {
			d.errorAt(d.pos(path+".psn"), fmt.Sprintf("psn: all with direction: response: the responder acknowledges several packets with one ACK, so most of a message's %d PSNs never appear in a response and the events could not all apply; give the PSNs of acknowledged packets, e.g. psn: %d (the last of each message)",
				ppm, ppm-1))
			good[i] = false
		}
		if txOK && tr.TxDepth > 1 && t.IterScope == IterScopeMessage && ev.Type != EventECN {
			d.errorAt(d.pos(path+".type"), fmt.Sprintf("type %s with tx-depth %d and iter-scope message: per-message ITER is ambiguous with several messages in flight; use iter-scope: connection, or only ecn events",
				ev.Type, tr.TxDepth))
			good[i] = false
		}
		if good[i] && expanded <= maxExpandedEvents {
			n := 1
			if ev.Msg == AllMessages {
				n = tr.NumMsgsPerQP
			}
			if ev.PSN == AllPackets {
				n *= ppm
			}
			expanded += n
		}
	}
	if expanded > maxExpandedEvents {
		d.errorAt(d.pos(fp+".data-pkt-events"), fmt.Sprintf("data-pkt-events expand to more than %d (event, message, packet) entries, the switch's event table; give msg, or fewer psn: all events", maxExpandedEvents))
	}
	d.checkOverlaps(tr, good)
	return expanded
}

// checkEventParams checks that an event has the parameters its type
// needs and no others, and that direction: response addresses a QP whose
// responder answers with ACK/NAK packets. fp is the path of the flow's
// keys (traffic, flows[i]), path the event's.
func (d *decoder) checkEventParams(tr *Traffic, ev *Event, fp, path string) bool {
	ok := true
	for _, p := range []struct {
		key  string
		set  bool
		typ  EventType
		want string
	}{
		{"delay-us", ev.DelayUs != 0, EventDelay, "the hold in µs, e.g. delay-us: 20"},
		{"overtakers", ev.Overtakers != 0, EventReorder, "how many later packets pass it, e.g. overtakers: 2"},
		{"max-hold-us", ev.MaxHoldUs != 0, EventReorder, ""},
		{"copies", ev.Copies != 0, EventDuplicate, "how many copies follow it, e.g. copies: 1"},
	} {
		switch {
		case p.set && ev.Type != p.typ:
			d.errorAt(d.pos(path+"."+p.key), fmt.Sprintf("%s applies to type %s only (this event is %s)", p.key, p.typ, ev.Type))
			ok = false
		case !p.set && ev.Type == p.typ && p.want != "":
			d.errorAt(ev.Pos, fmt.Sprintf("type %s needs %s: %s", ev.Type, p.key, p.want))
			ok = false
		}
	}
	if ev.Direction != DirData && !d.bad[fp+".num-qps"] && !d.bad[fp+".rdma-verb"] && ev.QPN < tr.NumQPs {
		read := tr.QPVerb(ev.QPN) == VerbRead
		switch {
		case ev.Direction == DirResponse && read:
			d.errorAt(d.pos(path+".direction"), fmt.Sprintf("direction: response on QP %d, a READ QP: its responder's packets are the READ responses, which are its data packets; omit direction (direction: request addresses its READ requests)", ev.QPN))
			ok = false
		case ev.Direction == DirRequest && !read:
			d.errorAt(d.pos(path+".direction"), fmt.Sprintf("direction: request on QP %d, a %s QP: its requests are its data packets; omit direction", ev.QPN, tr.QPVerb(ev.QPN)))
			ok = false
		}
	}
	return ok
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// byType holds, per event type, the 1-based index of the first event seen
// (0: none).
type byType [EventDuplicate + 1]int

func (b *byType) add(t EventType, idx int) {
	if b[t] == 0 {
		b[t] = idx + 1
	}
}

// overlapGroup indexes the events of one (qpn, iter) by the shape of their
// (psn, msg) so that overlaps are found in constant time per event.
type overlapGroup struct {
	exact       map[[2]int]*byType // (psn, msg)
	psnAllByMsg map[int]*byType    // psn all, msg m
	msgAllByPSN map[int]*byType    // psn p, msg all
	exactByMsg  map[int]*byType    // any exact event with msg m
	exactByPSN  map[int]*byType    // any exact event with psn p
	allAll      byType             // psn all, msg all
	anyExact    byType
	anyPSNAll   byType // psn all, any specific msg
	anyMsgAll   byType // msg all, any specific psn
}

func get[K comparable](m map[K]*byType, k K) *byType {
	b := m[k]
	if b == nil {
		b = &byType{}
		m[k] = b
	}
	return b
}

// checkOverlaps reports events that are identical to, covered by, or in
// conflict with an earlier event: after expansion, no two events may
// match the same (qpn, msg, psn, iter).
func (d *decoder) checkOverlaps(tr *Traffic, good []bool) {
	groups := map[[3]int]*overlapGroup{}
	for i, ev := range tr.Events {
		if !good[i] || ev.Type < EventDrop || ev.Type > EventDuplicate {
			continue
		}
		gk := [3]int{ev.QPN, ev.Iter, int(ev.Direction)}
		g := groups[gk]
		if g == nil {
			g = &overlapGroup{
				exact:       map[[2]int]*byType{},
				psnAllByMsg: map[int]*byType{},
				msgAllByPSN: map[int]*byType{},
				exactByMsg:  map[int]*byType{},
				exactByPSN:  map[int]*byType{},
			}
			groups[gk] = g
		}
		allP, allM := ev.PSN == AllPackets, ev.Msg == AllMessages
		var same *byType // events of the same shape and key
		var cands []*byType
		switch {
		case !allP && !allM:
			same = get(g.exact, [2]int{ev.PSN, ev.Msg})
			cands = []*byType{same, get(g.psnAllByMsg, ev.Msg), get(g.msgAllByPSN, ev.PSN), &g.allAll}
		case allP && !allM:
			same = get(g.psnAllByMsg, ev.Msg)
			cands = []*byType{same, &g.allAll, get(g.exactByMsg, ev.Msg), &g.anyMsgAll}
		case !allP && allM:
			same = get(g.msgAllByPSN, ev.PSN)
			cands = []*byType{same, &g.allAll, get(g.exactByPSN, ev.PSN), &g.anyPSNAll}
		default:
			same = &g.allAll
			cands = []*byType{same, &g.anyExact, &g.anyPSNAll, &g.anyMsgAll}
		}
		if j := same[ev.Type]; j != 0 {
			d.errorAt(ev.Pos, fmt.Sprintf("duplicate event: same as the event at %s", tr.Events[j-1].Pos))
			continue
		}
		first := 0
		for _, c := range cands {
			for _, j := range c {
				if j != 0 && (first == 0 || j < first) {
					first = j
				}
			}
		}
		if first != 0 {
			other := tr.Events[first-1]
			psn, msg := ev.PSN, ev.Msg
			if psn == AllPackets {
				psn = other.PSN
			}
			if msg == AllMessages {
				msg = other.Msg
			}
			what := describeMatch(ev.QPN, psn, ev.Iter, msg)
			if other.Type == ev.Type {
				d.errorAt(ev.Pos, fmt.Sprintf("redundant event: the %s event at %s already matches %s", other.Type, other.Pos, what))
			} else {
				d.errorAt(ev.Pos, fmt.Sprintf("conflicting events: this %s and the %s event at %s both match %s", ev.Type, other.Type, other.Pos, what))
			}
			continue
		}
		same.add(ev.Type, i)
		switch {
		case !allP && !allM:
			get(g.exactByMsg, ev.Msg).add(ev.Type, i)
			get(g.exactByPSN, ev.PSN).add(ev.Type, i)
			g.anyExact.add(ev.Type, i)
		case allP && !allM:
			g.anyPSNAll.add(ev.Type, i)
		case !allP && allM:
			g.anyMsgAll.add(ev.Type, i)
		}
	}
}

func describeMatch(qpn, psn, iter, msg int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "qpn %d, ", qpn)
	if psn == AllPackets {
		b.WriteString("every packet, ")
	} else {
		fmt.Fprintf(&b, "psn %d, ", psn)
	}
	fmt.Fprintf(&b, "iter %d ", iter)
	if msg == AllMessages {
		b.WriteString("in every message")
	} else {
		fmt.Fprintf(&b, "in message %d", msg)
	}
	return b.String()
}
