package collie

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func tr(dir, qp, op string, sizes ...int64) Traffic {
	return Traffic{Direction: dir, Memory: "dram-local", NumMRs: 1, MRSize: 4 << 20, QPType: qp, Opcode: op,
		NumQPs: 8, MTU: 4096, WQDepth: 128, WQEBatch: 8, SGEPerWQE: 3, MessageSizes: sizes}
}

func TestMFSMatch(t *testing.T) {
	// Anomaly #9: bidirectional, ≥ 3 SGEs, a mix of ≤ 1 KB and ≥ 64 KB.
	mix := MFS{{"direction": Values(Bi), "sge_per_wqe": Range(3, math.MaxInt64),
		"msg_size_min": Range(math.MinInt64, 1024), "msg_size_max": Range(65536, math.MaxInt64)}}
	// Anomaly #13: a loopback traffic and a receiving traffic.
	pair := MFS{{"direction": Values(Loopback)}, {"direction": Values(Uni), "opcode": Values("WRITE", "SEND")}}
	for _, tc := range []struct {
		name string
		m    MFS
		w    Workload
		want bool
	}{
		{"mixed", mix, Workload{[]Traffic{tr(Bi, "RC", "WRITE", 128, 65536, 1024)}}, true},
		// The public code's "mix" match is inverted: it matches unmixed
		// patterns. Here only a real mix matches.
		{"all-small", mix, Workload{[]Traffic{tr(Bi, "RC", "WRITE", 128, 512)}}, false},
		{"all-large", mix, Workload{[]Traffic{tr(Bi, "RC", "WRITE", 65536, 1<<20)}}, false},
		{"mix-uni", mix, Workload{[]Traffic{tr(Uni, "RC", "WRITE", 128, 65536)}}, false},
		{"mix-2sge", mix, Workload{[]Traffic{func() Traffic { t := tr(Bi, "RC", "WRITE", 128, 65536); t.SGEPerWQE = 2; return t }()}}, false},
		{"mix-second-traffic", mix, Workload{[]Traffic{tr(Uni, "RC", "WRITE", 128), tr(Bi, "UC", "SEND", 64, 1<<20)}}, true},
		{"pair", pair, Workload{[]Traffic{tr(Uni, "RC", "SEND", 4096), tr(Loopback, "RC", "WRITE", 4096)}}, true},
		{"pair-read", pair, Workload{[]Traffic{tr(Uni, "RC", "READ", 4096), tr(Loopback, "RC", "WRITE", 4096)}}, false},
		// Each entry needs its own traffic.
		{"pair-one-traffic", pair, Workload{[]Traffic{tr(Loopback, "RC", "WRITE", 4096)}}, false},
		{"pair-two-loopbacks", pair, Workload{[]Traffic{tr(Loopback, "RC", "WRITE", 4096), tr(Loopback, "RC", "WRITE", 4096)}}, false},
		{"empty-mfs", MFS{{}}, Workload{[]Traffic{tr(Uni, "UD", "SEND", 64)}}, true},
		{"mtu-values", MFS{{"mtu": IntValues(1024, 2048)}}, Workload{[]Traffic{tr(Uni, "RC", "WRITE", 64)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Match(tc.w); got != tc.want {
				t.Errorf("Match(%s) = %v, want %v", tc.w.Key(), got, tc.want)
			}
		})
	}
}

func TestMFSJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    MFS
		want string
	}{
		{"one", MFS{{"qp_type": Values("UD"), "wqe_batch": Range(64, math.MaxInt64), "mtu": IntValues(1024)}},
			`{"mtu":{"values":[1024]},"qp_type":{"values":["UD"]},"wqe_batch":{"min":64}}`},
		{"two", MFS{{"direction": Values(Loopback)}, {"num_qps": Range(2, 8)}},
			`{"t0.direction":{"values":["loopback"]},"t1.num_qps":{"max":8,"min":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.m)
			if err != nil || string(b) != tc.want {
				t.Fatalf("Marshal = %s, %v, want %s", b, err, tc.want)
			}
			var back MFS
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tc.m) {
				t.Errorf("Unmarshal(%s) = %v, %v, want %v", b, back, err, tc.m)
			}
		})
	}
	for _, bad := range []string{`{"nope":{"min":1}}`, `{"mtu":{}}`, `{"mtu":{"values":[1,"a"]}}`, `{"mtu":{"values":[1],"min":2}}`} {
		var m MFS
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("Unmarshal(%s) = nil error, want an error", bad)
		}
	}
}

// TestBuildMFSRecoversRegion runs the MFS algorithm against an oracle that
// is anomalous exactly inside a known region.
func TestBuildMFSRecoversRegion(t *testing.T) {
	sp := DefaultSpace()
	region := MFS{{"qp_type": Values("RC"), "opcode": Values("SEND"), "mtu": IntValues(1024),
		"wqe_batch": Range(64, math.MaxInt64), "wq_depth": Range(1024, math.MaxInt64),
		"msg_size_min": Range(2048, math.MaxInt64), "msg_size_max": Range(math.MinInt64, 8192)}}
	point := tr(Uni, "RC", "SEND", 4096, 2048)
	point.MTU, point.WQEBatch, point.WQDepth, point.NumQPs = 1024, 128, 4096, 64
	other := tr(Uni, "RC", "WRITE", 4096)
	w := Workload{Traffics: []Traffic{other, point}}
	if !region.Match(w) || sp.Validate(w) != nil {
		t.Fatal("bad fixture")
	}
	probes := 0
	res, err := sp.BuildMFS(w, func(p Workload) (bool, error) {
		probes++
		return region.Match(p), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Conditions implied by the constraints may be added (msg_size_max ≥
	// 2048 follows from msg_size_min ≥ 2048): compare the sets of valid
	// workloads around the point that each one matches.
	r := rand.New(rand.NewPCG(5, 6))
	cur := Workload{Traffics: []Traffic{point}}
	in, diff := 0, 0
	for range 20000 {
		cur = sp.Mutate(r, cur)
		if r.IntN(50) == 0 {
			cur = Workload{Traffics: []Traffic{point}}
		}
		a, b := region.Match(cur), res.MFS.Match(cur)
		if a {
			in++
		}
		if a != b {
			diff++
			if diff < 5 {
				t.Errorf("region.Match(%s) = %v, MFS.Match = %v (MFS %v)", cur.Key(), a, b, res.MFS)
			}
		}
	}
	if in < 100 {
		t.Errorf("only %d of the walk's points were in the region; the test is too weak", in)
	}
	if !res.Validated || len(res.Reduced.Traffics) != 1 || res.Reduced.Traffics[0].NumQPs != 1 {
		t.Errorf("reduced point = %s (validated %v), want one traffic with 1 QP", res.Reduced.Key(), res.Validated)
	}
	if res.Probes != probes || probes > 60 {
		t.Errorf("probes = %d (counted %d), want ≤ 60", res.Probes, probes)
	}
}

// TestBuildMFSNeighbourAnomaly: a UD SEND anomaly next to an RC SEND
// anomaly of narrower conditions (paper #15 and #17). At the found point
// the RC probe lands in the neighbour and shows the same symptom; the
// corner of the MFS (every range at its tightest level) is outside the
// neighbour, so RC leaves the condition. A WRITE anomaly is never probed
// with UD (that would turn the WRITE into a SEND and blame qp_type for the
// opcode): UD is left out without a probe.
func TestBuildMFSNeighbourAnomaly(t *testing.T) {
	sp := DefaultSpace()
	ud := MFS{{"qp_type": Values("UD"), "opcode": Values("SEND"),
		"num_qps": Range(32, math.MaxInt64), "wq_depth": Range(64, math.MaxInt64)}}
	rc := MFS{{"qp_type": Values("RC"), "opcode": Values("SEND"), "wqe_batch": Range(math.MinInt64, 16),
		"num_qps": Range(64, math.MaxInt64), "wq_depth": Range(128, math.MaxInt64), "msg_size_max": Range(math.MinInt64, 1024)}}
	point := tr(Uni, "UD", "SEND", 256)
	point.NumQPs, point.WQDepth, point.WQEBatch = 4096, 2048, 2
	w := Workload{Traffics: []Traffic{point}}
	if !ud.Match(w) || sp.Validate(w) != nil {
		t.Fatal("bad fixture")
	}
	// The RC probe of the point is inside the neighbour.
	probe := w.Clone()
	probe.Traffics[0].QPType = "RC"
	if !rc.Match(probe) || sp.Validate(probe) != nil {
		t.Fatal("bad fixture: the RC probe should land in the neighbour")
	}
	var probed []Workload
	res, err := sp.BuildMFS(w, func(p Workload) (bool, error) {
		probed = append(probed, p)
		return MatchAny([]MFS{ud, rc}, p), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := res.MFS[0]["qp_type"]
	if !slices.Equal(got.Strs, []string{"UD"}) {
		t.Errorf("qp_type condition %v, want {UD} (MFS %v)", got, res.MFS)
	}
	for _, c := range []struct {
		dim  string
		want int64
	}{{"num_qps", 32}, {"wq_depth", 64}} {
		if r := res.MFS[0][c.dim]; r.Min == nil || *r.Min != c.want || r.Max != nil {
			t.Errorf("%s condition %v, want ≥ %d", c.dim, r, c.want)
		}
	}
	if !res.Validated {
		t.Error("not validated")
	}

	// WRITE anomaly: UD is not probed.
	wr := MFS{{"qp_type": Values("RC", "UC"), "opcode": Values("WRITE")}}
	point = tr(Uni, "RC", "WRITE", 256)
	w = Workload{Traffics: []Traffic{point}}
	probed = nil
	res, err = sp.BuildMFS(w, func(p Workload) (bool, error) {
		probed = append(probed, p)
		return MatchAny([]MFS{wr, ud}, p), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probed {
		if p.Traffics[0].QPType == "UD" {
			t.Errorf("probed %s: UD turns the WRITE into a SEND", p.Key())
		}
	}
	if got := res.MFS[0]["qp_type"]; got.Strs != nil && slices.Contains(got.Strs, "UD") {
		t.Errorf("qp_type condition %v contains UD", got)
	}
	if !res.MFS.Match(w) {
		t.Errorf("MFS %v does not match its own point", res.MFS)
	}
}

// TestBuildMFSCoupledValue: a value that cannot be probed alone (UD turns
// a WRITE into a SEND) is probed after the other dimensions with its
// coupled change, and joins its condition when that point is inside the
// conditions and anomalous. Before, UD was left out of a WRITE-or-SEND
// anomaly's qp_type and the search found the UD part again as a new
// anomaly.
func TestBuildMFSCoupledValue(t *testing.T) {
	sp := DefaultSpace()
	for _, tc := range []struct {
		name   string
		region MFS
		// want: the qp_type condition (nil: none) and whether a UD point
		// was probed.
		want     []string
		probesUD bool
	}{
		// Any transport, WRITE or SEND: UD SEND is inside and anomalous.
		{"write-or-send", MFS{{"opcode": Values("WRITE", "SEND")}}, nil, true},
		// UD SEND is inside the conditions but not anomalous.
		{"not-ud", MFS{{"opcode": Values("WRITE", "SEND"), "qp_type": Values("RC", "UC")}}, []string{"RC", "UC"}, true},
		// WRITE only: a UD point cannot be inside, it is not probed.
		{"write-only", MFS{{"opcode": Values("WRITE")}}, []string{"RC", "UC"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Traffics: []Traffic{tr(Uni, "RC", "WRITE", 256)}}
			probedUD := false
			res, err := sp.BuildMFS(w, func(p Workload) (bool, error) {
				if p.Traffics[0].QPType == "UD" {
					probedUD = true
					if p.Traffics[0].Opcode != "SEND" {
						t.Errorf("probed %s", p.Key())
					}
				}
				return tc.region.Match(p), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got, has := res.MFS[0]["qp_type"]
			if (tc.want == nil) == has || (has && !slices.Equal(got.Strs, tc.want)) {
				t.Errorf("qp_type condition %v (present %v), want %v; MFS %v", got, has, tc.want, res.MFS)
			}
			if probedUD != tc.probesUD {
				t.Errorf("UD probed = %v, want %v", probedUD, tc.probesUD)
			}
			if op := res.MFS[0]["opcode"]; !slices.Equal(op.Strs, tc.region[0]["opcode"].Strs) {
				t.Errorf("opcode condition %v, want %v", op, tc.region[0]["opcode"])
			}
			if !res.Validated {
				t.Error("not validated")
			}
		})
	}
}
