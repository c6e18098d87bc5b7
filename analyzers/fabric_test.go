package analyzers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
)

// hawkeyeRun is Hawkeye's Fig. 1 on a line of four logical switches as a
// merged mirror trace (each switch's copies numbered from 1): F2 from h1
// (s1) to r (s4); the bursts A1, A2 (s4) to r congest s4's port 33; F1
// from h2 (s2) to h5 (s3) shares s2's egress 202 with F2. s4 pauses s3 at
// 10 µs, s3 s2 at 12, s2 s1 at 14, s1 h1 at 16 (each seen 500 ns later at
// the link's other end); XON from 30 µs. deadlockNs is Params.DeadlockNs.
func hawkeyeRun(t *testing.T, deadlockNs int64) ([]byte, model.Meta) {
	t.Helper()
	ip := func(b byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, b}) }
	hosts := []tracetest.Host{{Name: "h1", IP: ip(1), Port: 1}, {Name: "h2", IP: ip(2), Port: 2}, {Name: "h5", IP: ip(5), Port: 32},
		{Name: "r", IP: ip(9), Port: 33}, {Name: "a1", IP: ip(11), Port: 34}, {Name: "a2", IP: ip(12), Port: 35}}
	on := map[string]string{"h1": "s1", "h2": "s2", "h5": "s3", "r": "s4", "a1": "s4", "a2": "s4"}
	conns := tracetest.FlowConns(hosts, []tracetest.Flow{{Name: "F2", From: "h1", To: "r", QPs: 1}, {Name: "F1", From: "h2", To: "h5", QPs: 1},
		{Name: "A1", From: "a1", To: "r", QPs: 1}, {Name: "A2", From: "a2", To: "r", QPs: 1}})
	sw := map[string]uint8{"s1": 0, "s2": 1, "s3": 2, "s4": 3}
	fab := &model.Fabric{Switches: []string{"s1", "s2", "s3", "s4"}}
	links := [][2]string{{"s1", "s2"}, {"s2", "s3"}, {"s3", "s4"}}
	linkPort := map[[2]string]uint32{}
	for l, k := range links {
		a, b := uint32(200+2*l), uint32(201+2*l)
		linkPort[k], linkPort[[2]string{k[1], k[0]}] = a, b
		fab.Ports = append(fab.Ports, model.FabricPort{Port: a, Switch: k[0], PeerSwitch: k[1], PeerPort: b},
			model.FabricPort{Port: b, Switch: k[1], PeerSwitch: k[0], PeerPort: a})
	}
	for _, h := range hosts {
		fab.Ports = append(fab.Ports, model.FabricPort{Port: uint32(h.Port), Switch: on[h.Name], Host: h.Name})
	}
	sort.Slice(fab.Ports, func(i, j int) bool { return fab.Ports[i].Port < fab.Ports[j].Port })
	port := map[string]uint32{}
	for _, h := range hosts {
		port[h.Name] = uint32(h.Port)
	}
	paths := [][]string{{"s1", "s2", "s3", "s4"}, {"s2", "s3"}, {"s4"}, {"s4"}}
	ends := [][2]string{{"h1", "r"}, {"h2", "h5"}, {"a1", "r"}, {"a2", "r"}}
	route := func(from, to string, path []string) model.Route {
		r := model.Route{From: from, To: to}
		for i, s := range path {
			h := model.Hop{Switch: s, In: port[from], Out: port[to]}
			if i > 0 {
				h.In = linkPort[[2]string{s, path[i-1]}]
			}
			if i < len(path)-1 {
				h.Out = linkPort[[2]string{s, path[i+1]}]
			}
			r.Hops = append(r.Hops, h)
		}
		return r
	}
	for c, p := range paths {
		rev := append([]string(nil), p...)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		fab.Routes = append(fab.Routes, route(ends[c][0], ends[c][1], p), route(ends[c][1], ends[c][0], rev))
	}
	var fr []tracetest.Frame
	psn := make([]int, len(conns))
	send := func(t int64, c int, depth int64) {
		for i, s := range paths[c] {
			f := tracetest.Data(conns[c], t+int64(i)*1000, psn[c], 1024, 3, 0, false)
			if i == len(paths[c])-1 {
				f.QDepth = depth
			}
			f.Switch = sw[s]
			fr = append(fr, f)
		}
		psn[c]++
	}
	pause := func(t int64, s string, p uint16, q uint16) {
		f := tracetest.PFC(t, true, p, 3, q)
		f.Switch = sw[s]
		fr = append(fr, f)
		for _, fp := range fab.Ports {
			if uint16(fp.Port) == p && fp.PeerSwitch != "" {
				g := tracetest.PFC(t+500, false, uint16(fp.PeerPort), 3, q)
				g.Switch = sw[fp.PeerSwitch]
				fr = append(fr, g)
			}
		}
	}
	for k := range 5 {
		t0 := int64(1000 + 1000*k)
		send(t0, 0, 150000)
		send(t0+100, 1, 0)
		send(t0+200, 2, 180000)
		send(t0+300, 3, 170000)
	}
	pause(10000, "s4", 205, 0xFFFF)
	pause(12000, "s3", 203, 0xFFFF)
	pause(14000, "s2", 201, 0xFFFF)
	pause(16000, "s1", 1, 0xFFFF)
	pause(30000, "s4", 205, 0)
	pause(32000, "s3", 203, 0)
	pause(34000, "s2", 201, 0)
	pause(36000, "s1", 1, 0)
	send(40000, 2, 0)
	sort.SliceStable(fr, func(i, j int) bool { return fr[i].TimeNs < fr[j].TimeNs })
	b, err := tracetest.Pcap(fr, tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta := model.Meta{Connections: conns, Params: model.Params{MTU: 1024, DeadlockNs: deadlockNs}, Fabric: fab}
	for _, h := range hosts {
		meta.Hosts = append(meta.Hosts, model.HostParams{Name: h.Name, IPs: []netip.Addr{h.IP}})
	}
	return b, meta
}

// TestFabricReport: the fabric analysis through Analyze: the chain and
// the victim in report.txt, checks.deadlock in report.json only with a
// fabric (pass: nothing pauses after the traffic; skip without
// deadlock-ms).
func TestFabricReport(t *testing.T) {
	ok := &integrity.Verdict{Pass: true, FirstBadIndex: -1} // the trace merges four switches' sequences
	for _, tc := range []struct {
		name     string
		deadline int64
		fabric   bool
		deadlock string
	}{
		{"deadlock-ms", 1000000, true, `"deadlock": {"verdict": "pass", "reason": "no cycle of switch ports pausing each other through 40 µs .. 1040 µs", "window_start_ns": 40000, "window_end_ns": 1040000}`},
		{"no deadlock-ms", 0, true, `"deadlock": {"verdict": "skip", "reason": "the test sets no deadlock-ms"}`},
		{"no fabric", 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, meta := hawkeyeRun(t, tc.deadline)
			if !tc.fabric {
				meta.Fabric = nil
			}
			r, err := Analyze(context.Background(), Bytes("hawkeye", b), meta, Options{Checked: ok})
			if err != nil {
				t.Fatal(err)
			}
			j, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Checks map[string]json.RawMessage `json:"checks"`
			}
			if err := json.Unmarshal(j, &v); err != nil {
				t.Fatal(err)
			}
			page, err := report.HTML(r)
			if err != nil {
				t.Fatal(err)
			}
			panels := regexp.MustCompile(`<svg class="fabric"[^>]*><text[^>]*>([^<]*)</text>`).FindAllSubmatch(page, -1)
			var titles []string
			for _, p := range panels {
				titles = append(titles, string(p[1]))
			}
			d, has := v.Checks["deadlock"]
			if !tc.fabric {
				if has || r.PFC.Fabric != nil || len(titles) > 0 || bytes.Contains(page, []byte("<h2>Fabric</h2>")) {
					t.Errorf("checks.deadlock = %s, fabric %v, panels %q; want none without a fabric", d, r.PFC.Fabric != nil, titles)
				}
				return
			}
			// The pause crossed s3–s4 at 10 µs, s2–s3 at 12, s1–s2 at 14, h1's link at 16.
			wantTitles := []string{"at 10 µs: 1 of 9 links paused", "at 12 µs: 2 of 9 links paused", "at 14 µs: 3 of 9 links paused", "at 16 µs: 4 of 9 links paused"}
			if !reflect.DeepEqual(titles, wantTitles) {
				t.Errorf("fabric panels = %q, want %q", titles, wantTitles)
			}
			if n := bytes.Count(page, []byte(`stroke="#d22"`)); n != 1+2+3+4 {
				t.Errorf("red links over the panels = %d, want 10", n)
			}
			// The root, congestion at s4 port 33 (r's link) from 10 µs, in every panel.
			if n := bytes.Count(page, []byte(`stroke="#e90" stroke-width="3" stroke-dasharray="6 3"><title>s4 – r: never paused; congested (a chain&#39;s root) from 10 µs</title>`)); n != 4 {
				t.Errorf("congested root links over the panels = %d, want 4", n)
			}
			var got, want any
			if err := json.Unmarshal(d, &got); err != nil {
				t.Fatalf("checks.deadlock = %s: %v", d, err)
			}
			if err := json.Unmarshal([]byte("{"+tc.deadlock+"}"), &want); err != nil {
				t.Fatal(err)
			}
			if g, _ := json.Marshal(map[string]any{"deadlock": got}); string(g) != mustJSON(t, want) {
				t.Errorf("checks.deadlock = %s, want %s", g, mustJSON(t, want))
			}
			txt := report.Text(r)
			for _, w := range []string{
				"  chain (1 time): s1 paused h1 (port 1) at 16 µs ← s1 port 200 paused by s2 at 14.5 µs ← s2 port 202 paused by s3 at 12.5 µs ← s3 port 204 paused by s4 at 10.5 µs ← congestion at s4 port 33 (qdepth 176.128 KB, flows F2, A1, A2)\n", // 180000 bytes as the copy encodes it
				"    victim: F1, 2 hops from the root (waited at s2 port 202; never crosses s4 port 33)\n",
			} {
				if !strings.Contains(txt, w) {
					t.Errorf("report.txt lacks %q:\n%s", w, txt)
				}
			}
			if v := r.Verdict(report.CheckDeadlock); v != r.PFC.Deadlock.Verdict {
				t.Errorf("Verdict(deadlock) = %s, want %s", v, r.PFC.Deadlock.Verdict)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
