package model

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

func TestParseMeta(t *testing.T) {
	m, err := ParseMeta([]byte(`{
		"connections": [{"index": 3, "verb": "read", "requester": {"ip": "10.0.0.1", "qpn": 17, "ipsn": 100},
		                 "responder": {"ip": "10.0.0.2", "qpn": 18, "ipsn": 200, "port": "p0"}}],
		"mtu": 4096, "timeout": 14, "retry_cnt": 7, "min_time_between_cnps_us": 50, "cnp_scope": "per-port",
		"nics": [{"name": "rsp", "ips": ["10.0.0.2"], "before": {"np_cnp_sent": 1}, "after": {"np_cnp_sent": 3}}],
		"switch": {"roce_received": 10, "mirrored": 10, "dumpers": [{"name": "d0", "captured": 10, "dropped": 0}]},
		"unknown_field": true}`))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Connections[0]
	if c.ID != 3 || c.Verb != VerbRead || c.Responder.Port != "p0" || c.Requester.IPSN != 100 {
		t.Errorf("connection = %+v", c)
	}
	if ttr, ok := m.TransportTimeoutNs(); !ok || ttr != int64(roce.TransportTimeout(14)) || m.Retries() != 7 || m.MTU != 4096 {
		t.Errorf("params = %+v", m.Params)
	}
	if d, ok := m.NICs[0].Delta("np_cnp_sent"); !ok || d != 2 {
		t.Errorf("Delta(np_cnp_sent) = %d, %v; want 2", d, ok)
	}
	if *m.Switch.RoCEReceived != 10 || *m.Switch.Dumpers[0].Captured != 10 {
		t.Errorf("switch = %+v", m.Switch)
	}
}

// TestParseMetaRunDir reads the orchestrator's shapes: report.json
// connections, counters.json with NICs by role and switch totals.
func TestParseMetaRunDir(t *testing.T) {
	rep, err := ParseMeta([]byte(`{"schema": "lumina.report/v1", "valid": true, "checks": {"integrity": {"verdict": "pass"}},
		"connections": [{"id": 0, "verb": "write", "requester": {"ip": "10.0.0.1", "qpn": 5, "ipsn": 9}, "responder": {"ip": "10.0.0.2", "qpn": 6, "ipsn": 1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cnt, err := ParseMeta([]byte(`{"nics": {"responder": {"out_of_sequence": 2}, "requester": {"packet_seq_err": 2}},
		"switch": {"rx_roce": {"1": 5}, "mirrored": {"0": 3, "1": 2}, "rx_total": 5, "mirror_total": 5},
		"dumpers": [{"name": "dumper-0", "captured": 3, "kernel_dropped": 0, "buffer_dropped": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Merge(cnt)
	nics := ResolveNICs(m.NICs, m.Connections)
	if len(nics) != 2 || nics[0].Name != "requester" || !nics[0].Owns(netip.MustParseAddr("10.0.0.1")) || !nics[1].Owns(netip.MustParseAddr("10.0.0.2")) {
		t.Errorf("NICs = %+v", nics)
	}
	if *m.Switch.RoCEReceived != 5 || *m.Switch.Mirrored != 5 || *m.Switch.Dumpers[0].Dropped != 1 {
		t.Errorf("switch = %+v", m.Switch)
	}
}

// TestTimestampUncertainty: timestamp_uncertainty_ns is read at the top
// level, from a report.json's params and from a `lumina run` report.json's
// analysis; a later file's value overrides (Merge), 0 does not.
func TestTimestampUncertainty(t *testing.T) {
	tests := []struct {
		name string
		docs []string
		want int64
	}{
		{"absent: exact, as on sim", []string{`{}`}, 0},
		{"top level", []string{`{"timestamp_uncertainty_ns": 12000}`}, 12000},
		{"params object overrides", []string{`{"timestamp_uncertainty_ns": 1, "params": {"timestamp_uncertainty_ns": 250}}`}, 250},
		{"lumina run report.json", []string{`{"schema": "lumina.report/v1", "analysis": {"params": {"mtu": 1024, "timestamp_uncertainty_ns": 800}}}`}, 800},
		{"params beat analysis", []string{`{"params": {"timestamp_uncertainty_ns": 5}, "analysis": {"params": {"timestamp_uncertainty_ns": 800}}}`}, 5},
		{"merged: later overrides", []string{`{"timestamp_uncertainty_ns": 700}`, `{"timestamp_uncertainty_ns": 900}`}, 900},
		{"merged: later 0 keeps", []string{`{"timestamp_uncertainty_ns": 700}`, `{"mtu": 1024}`}, 700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Meta
			for _, d := range tt.docs {
				o, err := ParseMeta([]byte(d))
				if err != nil {
					t.Fatal(err)
				}
				m = m.Merge(o)
			}
			if m.TimestampUncertaintyNs != tt.want {
				t.Errorf("TimestampUncertaintyNs of %q = %d, want %d", tt.docs, m.TimestampUncertaintyNs, tt.want)
			}
		})
	}
}

// TestRunMeasuredParams: pause_lateness_ns, cnp_lateness_ns and
// sent_uncertainty_ns are read
// at the top level and from a `lumina run` report.json's analysis (so
// `lumina analyze` on a run directory allows what the run allowed);
// negative is refused. sent_uncertainty_ns 0 is a value (exact departure
// stamps), absent is not (-1 here).
func TestRunMeasuredParams(t *testing.T) {
	for _, p := range []struct {
		key          string
		get          func(Meta) int64
		absent, zero int64
	}{
		{"pause_lateness_ns", func(m Meta) int64 { return m.PauseLatenessNs }, 0, 0},
		{"cnp_lateness_ns", func(m Meta) int64 { return m.CNPLatenessNs }, 0, 0},
		{"sent_uncertainty_ns", func(m Meta) int64 {
			if m.SentUncertaintyNs == nil {
				return -1
			}
			return *m.SentUncertaintyNs
		}, -1, 0},
	} {
		for doc, want := range map[string]int64{
			`{}`:            p.absent,
			`{"KEY": 4000}`: 4000,
			`{"schema": "lumina.report/v1", "analysis": {"params": {"KEY": 3700}}}`: 3700,
			`{"schema": "lumina.report/v1", "analysis": {"params": {"KEY": 0}}}`:    p.zero,
			`{"KEY": 9, "analysis": {"params": {"KEY": 3700}}}`:                     9,
		} {
			doc = strings.ReplaceAll(doc, "KEY", p.key)
			m, err := ParseMeta([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			if got := p.get(m); got != want {
				t.Errorf("%s of %s = %d, want %d", p.key, doc, got, want)
			}
		}
		if _, err := ParseMeta([]byte(`{"` + p.key + `": -1}`)); err == nil || !strings.Contains(err.Error(), p.key) {
			t.Errorf("negative %s: err = %v, want one naming it", p.key, err)
		}
	}
}

func TestVerdictFailed(t *testing.T) {
	for v, want := range map[Verdict]bool{Pass: false, Fail: true, Skip: false, Inconclusive: false} {
		if got := v.Failed(); got != want {
			t.Errorf("%s.Failed() = %v, want %v", v, got, want)
		}
	}
}

func TestParseMetaErrors(t *testing.T) {
	for _, in := range []string{
		`{"connections": [{"verb": "write", "requester": {"qpn": 1}, "responder": {"ip": "10.0.0.2"}}]}`,
		`{"connections": [{"verb": "atomic", "requester": {"ip": "10.0.0.1"}, "responder": {"ip": "10.0.0.2"}}]}`,
		`{"connections": [{"requester": {"ip": "10.0.0.1", "qpn": 16777216}, "responder": {"ip": "10.0.0.2"}}]}`,
		`{"mtu": 100}`, `{"timeout": 32}`, `{"retry_cnt": 8}`, `{"min_time_between_cnps_us": -1}`, `{"cnp_scope": "per-host"}`,
		`{"timestamp_uncertainty_ns": -1}`, `{"params": {"timestamp_uncertainty_ns": -5}}`,
		`{"nics": 3}`, `[1, 2]`,
	} {
		if _, err := ParseMeta([]byte(in)); !errors.Is(err, ErrMeta) {
			t.Errorf("ParseMeta(%s) = %v, want ErrMeta", in, err)
		}
	}
}

func FuzzParseMeta(f *testing.F) {
	f.Add([]byte(`{"connections": [{"index": 0, "requester": {"ip": "10.0.0.1"}, "responder": {"ip": "10.0.0.2"}}], "timeout": 14}`))
	f.Add([]byte(`{"nics": {"requester": {"x": 1}}, "switch": {"rx_total": 3, "mirrored": {"0": 1}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMeta(b)
		if err == nil {
			if err := m.Validate(); err != nil {
				t.Errorf("ParseMeta accepted metadata that Validate rejects: %v", err)
			}
		}
	})
}

// TestInfer infers WRITE, READ and two opposite connections between the
// same hosts from a foreign capture.
func TestInfer(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	frame := func(src, dst netip.Addr, qpn uint32, op roce.Opcode, psn roce.PSN, syn roce.Syndrome, payload int) []byte {
		f := roce.FrameSpec{SrcIP: src, DstIP: dst, DestQP: qpn, Opcode: op, PSN: psn, Payload: make([]byte, payload)}
		f.AETH.Syndrome = syn
		if op == roce.RCReadRequest {
			f.RETH.Length = 4096
		}
		out, err := f.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ack := roce.ACKSyndrome(roce.CreditCountInvalid)
	frames := [][]byte{
		frame(a, b, 0x22, roce.RCWriteFirst, 100, 0, 2048), // A→B WRITE: A is requester 0x11
		frame(b, a, 0x33, roce.RCSendOnly, 7000, 0, 10),    // B→A SEND: B is requester 0x44
		frame(a, b, 0x22, roce.RCWriteLast, 101, 0, 5),
		frame(b, a, 0x11, roce.RCAcknowledge, 101, ack, 0),
		frame(a, b, 0x44, roce.RCAcknowledge, 7000, ack, 0),
		frame(a, b, 0x55, roce.RCReadRequest, 0xFFFFFF, 0, 0), // READ across the wrap
		frame(b, a, 0x66, roce.RCReadResponseFirst, 0xFFFFFF, ack, 2048),
		frame(b, a, 0x66, roce.RCReadResponseLast, 0, ack, 2048),
	}
	in := NewInferrer()
	var d Decoder
	for i, f := range frames {
		var p Pkt
		tp := trace.Packet{Index: i, Data: f, OrigLen: len(f)}
		if !d.Decode(&tp, &p) {
			t.Fatalf("frame %d not decoded", i)
		}
		in.Observe(&p)
	}
	got := in.Connections()
	want := []Connection{
		{ID: 0, Verb: VerbWrite, Inferred: true, Requester: Endpoint{IP: a, QPN: 0x11, IPSN: 100}, Responder: Endpoint{IP: b, QPN: 0x22}},
		{ID: 1, Verb: VerbSend, Inferred: true, Requester: Endpoint{IP: b, QPN: 0x44, IPSN: 7000}, Responder: Endpoint{IP: a, QPN: 0x33}},
		{ID: 2, Verb: VerbRead, Inferred: true, Requester: Endpoint{IP: a, QPN: 0x66, IPSN: 0xFFFFFF}, Responder: Endpoint{IP: b, QPN: 0x55}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Connections() =\n%+v\nwant\n%+v", got, want)
	}
	if in.MTU() != 2048 {
		t.Errorf("MTU() = %d, want 2048", in.MTU())
	}
	// The table maps each direction, requests and responses apart.
	tab := NewTable(got)
	for _, tc := range []struct {
		src, dst netip.Addr
		qpn      uint32
		req      bool
		conn     int
		dir      Dir
	}{{a, b, 0x22, true, 0, ToResponder}, {b, a, 0x11, false, 0, ToRequester}, {a, b, 0x44, false, 1, ToRequester}, {a, b, 0x44, true, -1, DirNone}} {
		if c, d := tab.Lookup(tc.src, tc.dst, tc.qpn, tc.req); c != tc.conn || d != tc.dir {
			t.Errorf("Lookup(%v, %v, %#x, %v) = %d %v, want %d %v", tc.src, tc.dst, tc.qpn, tc.req, c, d, tc.conn, tc.dir)
		}
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[int64]string{0: "0 ns", 999: "999 ns", 1000: "1,000 ns", 67_101_000: "67,101,000 ns", -1234567: "-1,234,567 ns"} {
		if got := FormatNs(v); got != want {
			t.Errorf("FormatNs(%d) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[int64]string{12_000: "12 µs", 500: "0.5 µs", 0: "0 µs"} {
		if got := FormatMicros(v); got != want {
			t.Errorf("FormatMicros(%d) = %q, want %q", v, got, want)
		}
	}
}

// TestParseMetaRunHosts: a lumina run report.json gives the hosts' facts
// and the NAK trigger as the run resolved them.
func TestParseMetaRunHosts(t *testing.T) {
	m, err := ParseMeta([]byte(`{"schema": "lumina.report/v1", "analysis": {"params": {"nak_triggers_cnp": true,
		"hosts": [{"name": "r", "ips": ["10.0.0.9"], "min_time_between_cnps_us": 4, "nak_triggers_cnp": true}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := m.HostOf(netip.MustParseAddr("10.0.0.9"))
	if !m.NAKTriggersCNP || len(m.Hosts) != 1 || h == nil || h.Name != "r" || *h.MinTimeBetweenCNPsUs != 4 || !h.NAKTriggersCNP {
		t.Errorf("ParseMeta = nak %v hosts %+v, want true and r (10.0.0.9, 4 µs, NAK triggers)", m.NAKTriggersCNP, m.Hosts)
	}
	if _, err := ParseMeta([]byte(`{"hosts": [{"name": "r", "min_time_between_cnps_us": -1}]}`)); err == nil {
		t.Error("ParseMeta accepted a negative host min_time_between_cnps_us")
	}
}

// TestParseMetaMirrorHolds: a run's report.json says its switch wrote
// holds into the copies (analysis.params.mirror_holds), so lumina analyze
// of the run reads them as the run's analysis did; a record without it
// leaves them unread.
func TestParseMetaMirrorHolds(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{`{"schema": "lumina.report/v1", "analysis": {"params": {"mirror_holds": true}}}`, true},
		{`{"schema": "lumina.report/v1", "analysis": {"params": {"mtu": 1024}}}`, false},
		{`{"mirror_holds": true}`, true},
		{`{}`, false},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			m, err := ParseMeta([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if m.MirrorHolds != tc.want {
				t.Errorf("ParseMeta(%s).MirrorHolds = %v, want %v", tc.doc, m.MirrorHolds, tc.want)
			}
		})
	}
}

// TestParseMetaFabricPFC: a run's report.json gives the fabric analysis
// the switches' watchdog log (switch_pfc.watchdog) and the deadlock
// window its analysis used (analysis.params.deadlock_ns).
func TestParseMetaFabricPFC(t *testing.T) {
	m, err := ParseMeta([]byte(`{"switch_pfc": {"ports": [{"port": 1, "priority": 3, "watchdog_drops": 4}],
		"watchdog": [{"at_ns": 1005000, "port": 1, "priority": 3, "kind": "storm"}, {"at_ns": 2000000, "port": 1, "priority": 3, "kind": "restore"}]},
		"analysis": {"params": {"deadlock_ns": 5000000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []WatchdogEvent{{AtNs: 1005000, Port: 1, Priority: 3, Kind: "storm"}, {AtNs: 2000000, Port: 1, Priority: 3, Kind: "restore"}}
	if m.Switch == nil || !reflect.DeepEqual(m.Switch.Watchdog, want) || *m.Switch.PFCDrops != 4 {
		t.Errorf("Switch = %+v, want watchdog %+v and 4 PFC drops", m.Switch, want)
	}
	if m.DeadlockNs != 5000000 {
		t.Errorf("DeadlockNs = %d, want 5000000", m.DeadlockNs)
	}
}
