package p4src

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	"github.com/netlumina/lumina/roce"
)

// p4Model is what the test extracts from lumina.p4: fully qualified names
// ("Ingress.l2_forward") with key and parameter widths.
type p4Model struct {
	tables    map[string][]string // name → "field:width" keys, then "@action" refs
	actions   map[string][]string // name → "param:width"
	registers map[string]string   // name → "width/size"
	counters  map[string]string   // name → "size"
}

var (
	reTypedef  = regexp.MustCompile(`typedef\s+bit<(\d+)>\s+(\w+);`)
	reConst    = regexp.MustCompile(`const\s+int\s+(\w+)\s*=\s*(\d+);`)
	reHeader   = regexp.MustCompile(`(?s)(?:header|struct)\s+(\w+)\s*\{(.*?)\}`)
	reField    = regexp.MustCompile(`(bit<(\d+)>|\w+)\s+(\w+);`)
	reControl  = regexp.MustCompile(`(?m)^control\s+(\w+)\(`)
	reTable    = regexp.MustCompile(`(?s)table\s+(\w+)\s*\{(.*?)\n    \}`)
	reKey      = regexp.MustCompile(`([\w.]+)\s*:\s*exact;`)
	reActs     = regexp.MustCompile(`actions\s*=\s*\{([^}]*)\}`)
	reSize     = regexp.MustCompile(`size\s*=\s*(\w+);`)
	reAction   = regexp.MustCompile(`action\s+(\w+)\(([^)]*)\)`)
	reRegister = regexp.MustCompile(`Register<bit<(\d+)>,\s*bit<\d+>>\((\w+)\)\s+(\w+);`)
	reCounter  = regexp.MustCompile(`Counter<bit<64>,\s*[\w<>]+>\((\w+),[^)]*\)\s+(\w+);`)
)

func parseP4(t *testing.T, src string) p4Model {
	types := map[string]int{"PortId_t": 9, "MirrorId_t": 10}
	for _, m := range reTypedef.FindAllStringSubmatch(src, -1) {
		types[m[2]], _ = strconv.Atoi(m[1])
	}
	consts := map[string]string{}
	for _, m := range reConst.FindAllStringSubmatch(src, -1) {
		consts[m[1]] = m[2]
	}
	size := func(s string) string {
		if v, ok := consts[s]; ok {
			return v
		}
		return s
	}
	// Field widths: hdr.<header>.<field> and meta.<field>.
	widths := map[string]int{"ig_intr_md.ingress_port": 9, "eg_intr_md.egress_port": 9}
	structOf := map[string]string{"ethernet": "ethernet_h", "vlan": "vlan_h", "arp": "arp_h", "ipv4": "ipv4_h", "udp": "udp_h", "bth": "bth_h"}
	fields := map[string]map[string]int{}
	for _, m := range reHeader.FindAllStringSubmatch(src, -1) {
		fields[m[1]] = map[string]int{}
		for _, f := range reField.FindAllStringSubmatch(m[2], -1) {
			w := types[f[1]]
			if f[2] != "" {
				w, _ = strconv.Atoi(f[2])
			}
			fields[m[1]][f[3]] = w
		}
	}
	for h, s := range structOf {
		for f, w := range fields[s] {
			widths["hdr."+h+"."+f] = w
		}
	}
	for f, w := range fields["ig_meta_t"] {
		widths["meta."+f] = w
	}
	m := p4Model{tables: map[string][]string{}, actions: map[string][]string{}, registers: map[string]string{}, counters: map[string]string{}}
	ctrls := reControl.FindAllStringSubmatchIndex(src, -1)
	for i, c := range ctrls {
		name := src[c[2]:c[3]]
		end := len(src)
		if i+1 < len(ctrls) {
			end = ctrls[i+1][0]
		}
		body := src[c[0]:end]
		if !strings.HasPrefix(name, "Ingress") && !strings.HasPrefix(name, "Egress") || strings.HasSuffix(name, "Deparser") {
			continue
		}
		for _, a := range reAction.FindAllStringSubmatch(body, -1) {
			var ps []string
			for _, p := range strings.Split(a[2], ",") {
				p = strings.TrimSpace(p)
				if p == "" {
					continue
				}
				f := strings.Fields(p)
				w := types[f[0]]
				if mm := regexp.MustCompile(`bit<(\d+)>`).FindStringSubmatch(f[0]); mm != nil {
					w, _ = strconv.Atoi(mm[1])
				}
				ps = append(ps, fmt.Sprintf("%s:%d", f[1], w))
			}
			m.actions[name+"."+a[1]] = ps
		}
		for _, tb := range reTable.FindAllStringSubmatch(body, -1) {
			var ks []string
			for _, k := range reKey.FindAllStringSubmatch(tb[2], -1) {
				w, ok := widths[k[1]]
				if !ok {
					t.Fatalf("table %s: no width known for key %s", tb[1], k[1])
				}
				ks = append(ks, fmt.Sprintf("%s:%d", k[1], w))
			}
			if am := reActs.FindStringSubmatch(tb[2]); am != nil {
				for _, a := range strings.Split(am[1], ";") {
					if a = strings.TrimSpace(a); a != "" {
						if a != "NoAction" {
							a = name + "." + a
						}
						ks = append(ks, "@"+a)
					}
				}
			}
			if sm := reSize.FindStringSubmatch(tb[2]); sm != nil {
				ks = append(ks, "size="+size(sm[1]))
			}
			m.tables[name+"."+tb[1]] = ks
		}
		for _, r := range reRegister.FindAllStringSubmatch(body, -1) {
			m.registers[name+"."+r[3]] = r[1] + "/" + size(r[2])
		}
		for _, c := range reCounter.FindAllStringSubmatch(body, -1) {
			m.counters[name+"."+c[2]] = size(c[1])
		}
	}
	m.actions["NoAction"] = nil
	return m
}

// p4infoModel renders the embedded P4Info the same way.
func p4infoModel(t *testing.T) p4Model {
	info, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	m := p4Model{tables: map[string][]string{}, actions: map[string][]string{}, registers: map[string]string{}, counters: map[string]string{}}
	aname := map[uint32]string{}
	for _, a := range info.Actions {
		aname[a.Preamble.Id] = a.Preamble.Name
		var ps []string
		for _, p := range a.Params {
			ps = append(ps, fmt.Sprintf("%s:%d", p.Name, p.Bitwidth))
		}
		m.actions[a.Preamble.Name] = ps
	}
	for _, tb := range info.Tables {
		var ks []string
		for _, f := range tb.MatchFields {
			ks = append(ks, fmt.Sprintf("%s:%d", f.Name, f.Bitwidth))
		}
		for _, r := range tb.ActionRefs {
			ks = append(ks, "@"+aname[r.Id])
		}
		ks = append(ks, fmt.Sprintf("size=%d", tb.Size))
		m.tables[tb.Preamble.Name] = ks
	}
	for _, r := range info.Registers {
		m.registers[r.Preamble.Name] = fmt.Sprintf("%d/%d", r.TypeSpec.GetBitstring().GetBit().GetBitwidth(), r.Size)
	}
	for _, c := range info.Counters {
		m.counters[c.Preamble.Name] = fmt.Sprint(c.Size)
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func TestP4SourceMatchesP4Info(t *testing.T) {
	src, info := parseP4(t, string(Source)), p4infoModel(t)
	for _, pair := range []struct {
		what      string
		src, info map[string]string
	}{
		{"register", src.registers, info.registers},
		{"counter", src.counters, info.counters},
	} {
		if a, b := sortedKeys(pair.src), sortedKeys(pair.info); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%ss: P4 source has %v, P4Info has %v", pair.what, a, b)
		}
		for k, v := range pair.src {
			if pair.info[k] != v {
				t.Errorf("%s %s: P4 source %s, P4Info %s", pair.what, k, v, pair.info[k])
			}
		}
	}
	for _, pair := range []struct {
		what      string
		src, info map[string][]string
	}{
		{"table", src.tables, info.tables},
		{"action", src.actions, info.actions},
	} {
		if a, b := sortedKeys(pair.src), sortedKeys(pair.info); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%ss: P4 source has %v, P4Info has %v", pair.what, a, b)
		}
		for k, v := range pair.src {
			if fmt.Sprint(pair.info[k]) != fmt.Sprint(v) {
				t.Errorf("%s %s: P4 source %v, P4Info %v", pair.what, k, v, pair.info[k])
			}
		}
	}
	if len(src.tables) != 11 || len(src.actions) != 16 || len(src.registers) != 6 || len(src.counters) != 4 {
		t.Errorf("parsed %d tables, %d actions, %d registers, %d counters from lumina.p4; want 11, 16, 6, 4",
			len(src.tables), len(src.actions), len(src.registers), len(src.counters))
	}
}

var reEventConst = regexp.MustCompile(`(?m)^const\s+bit<8>\s+(EVENT_\w+)\s*=\s*(\d+)\s*;`)

// TestP4EventConstants checks that the event types lumina.p4 writes into the
// mirror copies' TTL are roce's.
func TestP4EventConstants(t *testing.T) {
	got := map[string]int{}
	for _, m := range reEventConst.FindAllStringSubmatch(string(Source), -1) {
		if _, dup := got[m[1]]; dup {
			t.Errorf("lumina.p4 defines %s twice", m[1])
		}
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	for _, tc := range []struct {
		name string
		want roce.Event
	}{
		{"EVENT_NONE", roce.EventNone},
		{"EVENT_DROP", roce.EventDrop},
		{"EVENT_ECN", roce.EventECN},
		{"EVENT_CORRUPT", roce.EventCorrupt},
		{"EVENT_DELAY", roce.EventDelay},
		{"EVENT_REORDER", roce.EventReorder},
		{"EVENT_DUPLICATE", roce.EventDuplicate},
		{"EVENT_PAUSE", roce.EventPause},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := got[tc.name]
			if !ok {
				t.Fatalf("lumina.p4 does not define const bit<8> %s", tc.name)
			}
			if v != int(tc.want) {
				t.Errorf("lumina.p4 %s = %d, want %d (roce event %v)", tc.name, v, tc.want, tc.want)
			}
		})
	}
	if len(got) != 8 {
		t.Errorf("lumina.p4 defines %d EVENT_ constants %v, want 8", len(got), got)
	}
}

// TestP4PauseHeaders checks the headers of the packet generator's pauses
// (docs/tofino.md §8) against the Go side: pause_gen_h is the template's
// bfrt.PauseGenLen bytes (2 bits pad, 5-bit switch, 9-bit port:
// bfrt.Pause.Template), mac_mirror_h the roce.MACMirrorHeaderLen
// wrapper of roce.AppendMACMirror, with its EtherType and sent flag.
func TestP4PauseHeaders(t *testing.T) {
	src := string(Source)
	for _, tc := range []struct {
		header string
		fields []string
		bytes  int
	}{
		{"pause_gen_h", []string{"bit<2> pad", "bit<5> switch_id", "PortId_t port"}, bfrt.PauseGenLen},
		{"mac_mirror_h", []string{"bit<48> timestamp", "bit<48> seq", "bit<16> ether_type", "bit<8> event", "bit<8> flags", "bit<16> port"}, roce.MACMirrorHeaderLen},
	} {
		m := regexp.MustCompile(`(?s)header ` + tc.header + ` \{(.*?)\n\}`).FindStringSubmatch(src)
		if m == nil {
			t.Errorf("lumina.p4 has no header %s", tc.header)
			continue
		}
		var got []string
		bits := 0
		for _, f := range regexp.MustCompile(`(bit<(\d+)>|PortId_t)\s+(\w+);`).FindAllStringSubmatch(m[1], -1) {
			got = append(got, strings.Join(strings.Fields(f[1]+" "+f[3]), " "))
			if f[2] != "" {
				n, _ := strconv.Atoi(f[2])
				bits += n
			} else {
				bits += 9
			}
		}
		if strings.Join(got, "; ") != strings.Join(tc.fields, "; ") || bits != 8*tc.bytes {
			t.Errorf("%s: %v (%d bits), want %v (%d bytes)", tc.header, got, bits, tc.fields, tc.bytes)
		}
	}
	for _, c := range []struct {
		re   string
		want int
	}{
		{`const bit<16> ETHERTYPE_LUMINA_MIRROR = 0x([0-9A-F]+);`, roce.EtherTypeLuminaMirror},
		{`const bit<8>  MAC_MIRROR_SENT = (\d+);`, roce.MACMirrorSent},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(src)
		base := 10
		if strings.Contains(c.re, "0x") {
			base = 16
		}
		if m == nil {
			t.Errorf("lumina.p4: no %s", c.re)
		} else if v, _ := strconv.ParseInt(m[1], base, 32); int(v) != c.want {
			t.Errorf("lumina.p4: %s = %s, want %#x", c.re, m[1], c.want)
		}
	}
}

var (
	reDepthStep = regexp.MustCompile(`qb\[31:(\d+)\] == 0\) \{\s*code = 3w(\d) \+\+ qb\[(\d+):(\d+)\];`)
	reCellMul   = regexp.MustCompile(`bit<32> qb = ((?:\(qc << \d+\)(?: \+ )?)+);`)
	reCellBytes = regexp.MustCompile(`#define LUMINA_CELL_BYTES (\d+)`)
	reShift     = regexp.MustCompile(`qc << (\d+)`)
)

// TestP4DepthCode checks that lumina.p4 encodes the queue depth as
// roce.EncodeDepth does (exponent e for depths below 256 << 3e, mantissa
// bits 3e..3e+7, saturating at 0x7FF), that its shift-adds multiply the
// cell count by the LUMINA_CELL_BYTES of each target, and that the copy's
// rewrite puts the code's top 5 bits above the event in the TTL and its
// low 6 bits in the BTH's resv6.
func TestP4DepthCode(t *testing.T) {
	src := string(Source)
	steps := reDepthStep.FindAllStringSubmatch(src, -1)
	if len(steps) != 8 {
		t.Fatalf("lumina.p4 has %d depth-code steps, want 8 (e = 0..7)", len(steps))
	}
	for e, m := range steps {
		n := make([]int, 4)
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		if got, want := n, []int{8 + 3*e, e, 7 + 3*e, 3 * e}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("step %d: qb[31:%d] == 0 → 3w%d ++ qb[%d:%d]; want qb[31:%d] → 3w%d ++ qb[%d:%d]", e, n[0], n[1], n[2], n[3], want[0], want[1], want[2], want[3])
		}
		// The largest depth of the step and the first beyond it encode as
		// roce does.
		if top := int64(1)<<(8+3*e) - 1; roce.EncodeDepth(top) != roce.DepthCode(e<<8|int(top>>(3*e))) {
			t.Errorf("step %d: roce.EncodeDepth(%d) = %#x, lumina.p4 %#x", e, top, roce.EncodeDepth(top), e<<8|int(top>>(3*e)))
		}
	}
	if !strings.Contains(src, "code = 0x7FF;") || roce.MaxDepthCode != 0x7FF {
		t.Error("lumina.p4 does not saturate the depth code at 0x7FF (roce.MaxDepthCode)")
	}
	cells := reCellBytes.FindAllStringSubmatch(src, -1)
	muls := reCellMul.FindAllStringSubmatch(src, -1)
	if len(cells) != 2 || len(muls) != 2 {
		t.Fatalf("lumina.p4: %d LUMINA_CELL_BYTES defaults, %d shift-adds; want 2 each (Tofino 2, Tofino 1)", len(cells), len(muls))
	}
	for i, want := range []int{176, 80} {
		c, _ := strconv.Atoi(cells[i][1])
		sum := 0
		for _, sh := range reShift.FindAllStringSubmatch(muls[i][1], -1) {
			k, _ := strconv.Atoi(sh[1])
			sum += 1 << k
		}
		if c != want || sum != want {
			t.Errorf("target %d: LUMINA_CELL_BYTES %d, shift-add multiplies by %d; want %d", i, c, sum, want)
		}
	}
	for _, want := range []string{
		"hdr.ipv4.ttl = hdr.bridge.qdepth[10:6] ++ hdr.bridge.event[2:0];",
		"hdr.bth.resv6 = hdr.bridge.qdepth[5:0];",
		"bit<19> q = eg_intr_md.enq_qdepth;",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("lumina.p4 lacks %q", want)
		}
	}
}

// TestP4PktgenPort: lumina.p4's LUMINA_PKTGEN_PORT has its own default per
// chip, the pipe-local port the Go side enables and writes as the apps'
// source port (bfrt Chip.DefaultPktgenPort), and a valid pktgen port of
// the chip; it does not follow LUMINA_RECIRC_PORT, which Tofino 2 users
// are told to override (docs/tofino.md §8).
func TestP4PktgenPort(t *testing.T) {
	m := regexp.MustCompile(`#ifndef LUMINA_PKTGEN_PORT\n#if __TARGET_TOFINO__ == 2\n#define LUMINA_PKTGEN_PORT (\d+)\n#else\n#define LUMINA_PKTGEN_PORT (\d+)\n#endif\n#endif`).FindStringSubmatch(string(Source))
	if m == nil {
		t.Fatal("lumina.p4: LUMINA_PKTGEN_PORT has no numeric default per chip (#if __TARGET_TOFINO__ == 2 … #else … #endif)")
	}
	for i, chip := range []bfrt.Chip{bfrt.Tofino2, bfrt.Tofino1} {
		v, _ := strconv.Atoi(m[i+1])
		if uint32(v) != chip.DefaultPktgenPort() || chip.CheckPktgenPort(uint32(v)) != nil {
			t.Errorf("Tofino %d: LUMINA_PKTGEN_PORT %d, the Go side's %d", chip, v, chip.DefaultPktgenPort())
		}
	}
}
