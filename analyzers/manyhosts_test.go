package analyzers

import (
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/flows"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/roce"
)

// victimRun is Hawkeye Fig. 1 on one switch as a lumina mirror trace:
// flows a, b, c from h1, h2, h3 to r fill r's egress queue (20 KB and
// rising); the switch pauses h1 (port 1, priority 3) from 10.5 to 14.5 µs,
// so h1's flow v to h4, whose queue holds at most 100 bytes, is the
// victim. r marks a and b once and sends each a CNP; h1's NIC counted one
// rate cut.
func victimRun(t *testing.T) ([]byte, model.Meta) {
	t.Helper()
	ip := func(b byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, b}) }
	hosts := []tracetest.Host{{Name: "h1", IP: ip(1), Port: 1}, {Name: "h2", IP: ip(2), Port: 2}, {Name: "h3", IP: ip(3), Port: 3},
		{Name: "h4", IP: ip(4), Port: 4}, {Name: "r", IP: ip(9), Port: 9}}
	conns := tracetest.FlowConns(hosts, []tracetest.Flow{{Name: "a", From: "h1", To: "r", QPs: 1}, {Name: "b", From: "h2", To: "r", QPs: 1},
		{Name: "c", From: "h3", To: "r", QPs: 1}, {Name: "v", From: "h1", To: "h4", QPs: 1}})
	const base = 1_000_000
	var fr []tracetest.Frame
	psn := make([]int, len(conns))
	send := func(t int64, c int, depth int64, ce bool) {
		fr = append(fr, tracetest.Data(conns[c], t, psn[c], 1024, 3, depth, ce))
		psn[c]++
	}
	for k := range 40 {
		t := int64(base + k*1000)
		depth := int64(20000 + k*500)
		paused := k >= 11 && k <= 14
		if !paused {
			send(t, 0, depth, k == 2)
		}
		send(t+10, 1, depth, k == 3)
		send(t+20, 2, depth, false)
		if !paused {
			send(t+30, 3, 100, false)
		}
		switch k {
		case 2:
			fr = append(fr, tracetest.CNP(conns[0], t+100))
		case 3:
			fr = append(fr, tracetest.CNP(conns[1], t+100))
		case 10:
			fr = append(fr, tracetest.PFC(t+500, true, 1, 3, 0xFFFF))
		case 14:
			fr = append(fr, tracetest.PFC(t+500, true, 1, 3, 0))
		}
	}
	for c := range conns {
		fr = append(fr, tracetest.Ack(conns[c], int64(base+41_000+c*10), psn[c]-1))
	}
	b, err := tracetest.Pcap(fr, tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	us := 4.0
	meta := model.Meta{Connections: conns, Params: model.Params{MTU: 1024, MinTimeBetweenCNPsUs: &us},
		SwitchPorts: map[string]uint32{}, NICs: []model.NIC{{Name: "h1", Before: model.Counters{}, After: model.Counters{"rp_cnp_handled": 1}}}}
	for _, h := range hosts {
		meta.SwitchPorts[h.Name] = uint32(h.Port)
		meta.Hosts = append(meta.Hosts, model.HostParams{Name: h.Name, IPs: []netip.Addr{h.IP}, MinTimeBetweenCNPsUs: &us})
	}
	return b, meta
}

func TestManyHostsVictim(t *testing.T) {
	b, meta := victimRun(t)
	r, err := Analyze(context.Background(), Bytes("victim", b), meta, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed() {
		t.Fatalf("report does not pass: valid %v, failed %v: %s", r.Valid, r.Failed(), report.Text(r))
	}
	f := &r.Flows
	if f.Verdict != model.Pass || f.Reason != "all 4 flows made progress" {
		t.Errorf("flows verdict = %s %q, want pass", f.Verdict, f.Reason)
	}
	one := int64(1)
	for i, want := range []struct {
		name, from, to string
		packets        int64
		cnps           int
		cuts           *int64
	}{{"a", "h1", "r", 36, 1, &one}, {"b", "h2", "r", 40, 1, nil}, {"c", "h3", "r", 40, 0, nil}, {"v", "h1", "h4", 36, 0, &one}} {
		got := f.Flows[i]
		if got.Name != want.name || got.From != want.from || got.To != want.to || got.Packets != want.packets || got.Bytes != 1024*want.packets ||
			got.CNPs != want.cnps || !reflect.DeepEqual(got.SenderRateCuts, want.cuts) || got.Victim != (want.name == "v") {
			t.Errorf("flow %d = %+v, want %s %s→%s %d packets of 1024 B, %d CNPs, rate cuts %v", i, got, want.name, want.from, want.to,
				want.packets, want.cnps, want.cuts)
		}
	}
	origin := "congestion: no pause received on another port at the time: egress contention in the switch (the queue toward port 9 (r) held port 1 (h1)'s packets)"
	wantV := []flows.Victim{{Flow: "v", Host: "h1", Port: 1, Priority: 3, Episode: 0, Episodes: 1, StartNs: 1_010_500, PausedNs: 4000,
		// 27000 B in the mirror format: 52 << 9.
		Dest: "h4", DestMaxDepth: 100, Congested: "r", CongestedPort: 9, CongestedMaxDepth: 26624, CongestingFlows: []string{"a", "b", "c"},
		Origin: origin}}
	if !reflect.DeepEqual(f.Victims, wantV) {
		t.Errorf("victims = %+v\nwant %+v", f.Victims, wantV)
	}
	if f.Bottleneck != "r" || len(f.Groups) != 1 || f.Groups[0].To != "r" || !reflect.DeepEqual(f.Groups[0].Flows, []string{"a", "b", "c"}) ||
		f.Groups[0].MaxDepth != 39424 { // 39500 B: 77 << 9
		t.Errorf("bottleneck %q, groups %+v; want r with a, b, c, max depth 39424", f.Bottleneck, f.Groups)
	}
	if got := r.Verdict(report.CheckFlows); got != model.Pass {
		t.Errorf("Verdict(flows) = %s, want pass", got)
	}

	j, err := r.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Flows struct {
			Victims []struct {
				Flow string `json:"flow"`
			} `json:"victims"`
		} `json:"flows"`
		Checks struct {
			Flows struct {
				Verdict model.Verdict `json:"verdict"`
			} `json:"flows"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Flows.Victims) != 1 || doc.Flows.Victims[0].Flow != "v" || doc.Checks.Flows.Verdict != model.Pass {
		t.Errorf("report.json flows = %+v, checks.flows = %+v", doc.Flows, doc.Checks.Flows)
	}
	var back report.Report
	if err := json.Unmarshal(j, &back); err != nil || !reflect.DeepEqual(back.Flows.Victims, f.Victims) {
		t.Errorf("report.json round trip: %v, victims %+v", err, back.Flows.Victims)
	}

	txt := report.Text(r)
	for _, s := range []string{
		"  #3 write 10.0.0.1 qpn 0x103 ipsn 0 -> 10.0.0.4 qpn 0x203 flow v\n",
		"  flows           pass  4 flows; to r Jain ",
		"  flow v h1 -> h4: 36864 bytes in 36 packets",
		"  victim v: h1 paused on port 1 prio 3 (1 episode from episode 0, 4µs) while its queue to h4 stayed at most 100 B; congested: r (port 9), 26624 B, by a, b, c; origin " + origin,
		"  queue to r (port 9) (bottleneck): max 39424 B, p99 39424 B over 116 packets",
	} {
		if !strings.Contains(txt, s) {
			t.Errorf("text report lacks %q:\n%s", s, txt)
		}
	}
	h, err := report.HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`<table id="victims">`, `<td>v</td><td>h1</td><td>1</td><td>3</td>`, "Goodput per flow", "Egress queue depth per port"} {
		if !strings.Contains(string(h), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}

// TestManyHostsTwoHostUnchanged: a two-host report has no flows analysis
// and no checks.flows.
func TestManyHostsTwoHostUnchanged(t *testing.T) {
	b, meta := victimRun(t)
	for i := range meta.Connections {
		meta.Connections[i].Flow = ""
	}
	r, err := Analyze(context.Background(), Bytes("victim", b), meta, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := r.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Flows  json.RawMessage            `json:"flows"`
		Checks map[string]json.RawMessage `json:"checks"`
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	_, inChecks := doc.Checks["flows"]
	if r.Flows.Verdict != "" || doc.Flows != nil || inChecks || strings.Contains(report.Text(r), "flows (") {
		t.Errorf("a report without flow names has a flows analysis: %+v", r.Flows)
	}
}

// TestPassAllocsFlows is TestPassAllocs with the connections in two
// flows: the flows analysis allocates nothing per packet either.
func TestPassAllocsFlows(t *testing.T) {
	s := newSynth(t, 8)
	meta := synthMeta(s)
	meta.Connections = append([]model.Connection(nil), meta.Connections...)
	for i := range meta.Connections {
		meta.Connections[i].Flow = []string{"x", "y"}[i%2]
	}
	m := newMainPass(model.NewTable(meta.Connections), meta, meta.Params, Options{},
		model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: 1024, Mirror: true}, true)
	if !m.a.flows.Enabled() {
		t.Fatal("flows analysis not enabled")
	}
	for range 200_000 {
		p := s.next()
		m.packet(&p)
	}
	s.dropEvery = 1 << 30
	if got := testing.AllocsPerRun(100_000, func() {
		p := s.next()
		m.packet(&p)
	}); got != 0 {
		t.Errorf("allocations per packet = %v, want 0", got)
	}
}
