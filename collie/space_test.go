package collie

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRandomRespectsConstraints(t *testing.T) {
	for _, tc := range []struct {
		name  string
		space string
	}{
		{"default", ""},
		{"ud-only", "qp_types: [UD]\nmtu: {values: [1024]}\n"},
		{"small-depth", "wq_depth: {min: 1, max: 8}\nwqe_batch: {min: 1, max: 128}\n"},
		{"events", "max_traffics: 1\nmessage_sizes: {min: 1024, max: 8192, max_len: 1}\nevents: {slots: 2, messages: 3}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := ParseSpace([]byte(tc.space))
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for i := range 2000 {
				w := sp.Random(r)
				if err := sp.Validate(w); err != nil {
					t.Fatalf("draw %d: Validate(%s) = %v, want nil", i, w.Key(), err)
				}
			}
		})
	}
}

func TestMutateRespectsConstraintsAndIsLocal(t *testing.T) {
	sp := DefaultSpace()
	r := rand.New(rand.NewPCG(3, 4))
	w := sp.Random(r)
	oneDim := 0
	const steps = 5000
	for i := range steps {
		n := sp.Mutate(r, w)
		if err := sp.Validate(n); err != nil {
			t.Fatalf("step %d: Validate(Mutate(%s)) = %v, want nil", i, w.Key(), err)
		}
		if n.Equal(w) {
			t.Fatalf("step %d: Mutate returned the same workload", i)
		}
		if len(n.Traffics) == len(w.Traffics) && changedDims(w, n) == 1 {
			oneDim++
		}
		w = n
	}
	// Constraint repairs may touch a second dimension; most steps change one.
	if oneDim < steps*7/10 {
		t.Errorf("single-dimension mutations = %d of %d, want ≥ 70%%", oneDim, steps)
	}
}

func changedDims(a, b Workload) int {
	n := 0
	for i := range a.Traffics {
		for _, d := range baseDims {
			if d == "msg_size_min" || d == "msg_size_max" || d == "msg_count" {
				continue
			}
			va, _ := dimValue(&a.Traffics[i], d)
			vb, _ := dimValue(&b.Traffics[i], d)
			if va != vb {
				n++
			}
		}
		if !slices.Equal(a.Traffics[i].MessageSizes, b.Traffics[i].MessageSizes) {
			n++
		}
	}
	return n
}

func TestRepairKeepsMutatedDimension(t *testing.T) {
	sp := DefaultSpace()
	tr := Traffic{Direction: Uni, Memory: "dram-local", NumMRs: 1, MRSize: 65536, QPType: "RC", Opcode: "WRITE",
		NumQPs: 1, MTU: 1024, WQDepth: 16, WQEBatch: 8, SGEPerWQE: 1, MessageSizes: []int64{4096}}
	for _, tc := range []struct {
		dim   string
		v     value
		check func(t *Traffic) bool
	}{
		{"wqe_batch", value{n: 64}, func(t *Traffic) bool { return t.WQEBatch == 64 && t.WQDepth >= 64 }},
		{"wq_depth", value{n: 4}, func(t *Traffic) bool { return t.WQDepth == 4 && t.WQEBatch <= 4 }},
		{"qp_type", value{isStr: true, str: "UD"}, func(t *Traffic) bool { return t.QPType == "UD" && t.Opcode == "SEND" && t.MaxMsg() <= t.MTU }},
		{"opcode", value{isStr: true, str: "READ"}, func(t *Traffic) bool { return t.Opcode == "READ" && t.QPType == "RC" }},
		{"msg_size_max", value{n: 1 << 20}, func(t *Traffic) bool { return t.MaxMsg() == 1<<20 && t.MRSize >= 1<<20 }},
	} {
		t.Run(tc.dim, func(t *testing.T) {
			c := tr.clone()
			sp.setDim(&c, tc.dim, tc.v)
			if !tc.check(&c) {
				t.Errorf("setDim(%s, %+v) = %+v", tc.dim, tc.v, c)
			}
			if err := sp.validateTraffic(&c); err != nil {
				t.Errorf("validateTraffic = %v, want nil", err)
			}
		})
	}
}

// A mutation that lowers mr_size below the smallest message level of the
// space: the messages cannot shrink, so the repair must raise mr_size after
// all (found by FuzzParseSpace in CI).
func TestRepairKeptMRSizeBelowSmallestMessage(t *testing.T) {
	sp, err := ParseSpace([]byte("mr_size: {values: [6, 536]}\nmessage_sizes: {min: 64, max: 512, max_len: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := Traffic{Direction: Uni, Memory: "dram-local", NumMRs: 1, MRSize: 6, QPType: "RC", Opcode: "WRITE",
		NumQPs: 1, MTU: 1024, WQDepth: 1, WQEBatch: 1, SGEPerWQE: 1, MessageSizes: []int64{256, 512, 128, 64}}
	sp.repair(&tr, "mr_size")
	if err := sp.validateTraffic(&tr); err != nil {
		t.Fatalf("after repair: validateTraffic(%+v) = %v, want nil", tr, err)
	}
	if tr.MRSize != 536 || !slices.Equal(tr.MessageSizes, []int64{64, 64, 64, 64}) {
		t.Errorf("repair: mr_size %d, messages %v; want 536 and the messages shrunk to 64", tr.MRSize, tr.MessageSizes)
	}
}

// Keeping a num_mrs whose smallest mr_size already exceeds the register cap
// looped forever in repair (found by FuzzParseSpace as a hang).
func TestRepairKeptNumMRsOverRegisterCap(t *testing.T) {
	sp, err := ParseSpace([]byte("max_registered_bytes: 2748779\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := Traffic{Direction: Uni, Memory: "dram-local", NumMRs: 1024, MRSize: 65536, QPType: "RC", Opcode: "WRITE",
		NumQPs: 1, MTU: 1024, WQDepth: 1, WQEBatch: 1, SGEPerWQE: 1, MessageSizes: []int64{64}}
	sp.repair(&tr, "num_mrs")
	if err := sp.validateTraffic(&tr); err != nil {
		t.Fatalf("after repair: validateTraffic(%+v) = %v, want nil", tr, err)
	}
	if tr.MRSize != 4096 || tr.NumMRs != 512 {
		t.Errorf("repair: num_mrs %d × mr_size %d; want 512 × 4096 (the largest count under the cap at the smallest size)", tr.NumMRs, tr.MRSize)
	}
}

// smallest is the last resort of a draw no repair made valid: the result
// is valid in any space validate accepts.
func TestSmallestIsValid(t *testing.T) {
	for _, y := range []string{
		"",
		"max_registered_bytes: 4096\nmessage_sizes: {min: 64, max: 4194304, max_len: 8}\n",
		"qp_types: [UD, RC]\nopcodes: [SEND]\nmtu: {values: [256]}\nmessage_sizes: {min: 1024, max: 8192}\n",
	} {
		sp, err := ParseSpace([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		tr := Traffic{Direction: Uni, Memory: "gpu", QPType: "UD", Opcode: "SEND", NumMRs: 1 << 20, MRSize: 1 << 40,
			MTU: 1, NumQPs: 1 << 20, WQDepth: 1, WQEBatch: 1 << 20, SGEPerWQE: 99, MessageSizes: []int64{1 << 40, 3}}
		sp.smallest(&tr)
		if err := sp.validateTraffic(&tr); err != nil {
			t.Errorf("space %q: smallest gives %+v: %v", y, tr, err)
		}
	}
}

func TestParseSpaceErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"unknown-key", "num_qpz: {min: 1}\n"},
		{"bad-direction", "directions: [sideways]\n"},
		{"bad-qp", "qp_types: [XRC]\n"},
		{"no-transport", "qp_types: [UD]\nopcodes: [READ]\n"},
		{"min-gt-max", "num_qps: {min: 10, max: 5}\n"},
		{"batch-gt-depth", "wq_depth: {min: 1, max: 4}\nwqe_batch: {min: 8, max: 16}\n"},
		{"bad-event-type", "events: {slots: 1, types: [explode]}\n"},
		{"registered-cap-below-any-workload", "max_registered_bytes: 2\n"},
		{"mr-size-below-every-msg", "mr_size: {values: [32]}\nmessage_sizes: {min: 64, max: 512}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpace([]byte(tc.yaml))
			if !errors.Is(err, ErrSpace) {
				t.Errorf("ParseSpace(%q) = %v, want ErrSpace", tc.yaml, err)
			}
		})
	}
}

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		r    IntRange
		want []int64
	}{
		{IntRange{Min: 1, Max: 20}, []int64{1, 2, 4, 8, 16, 20}},
		{IntRange{Min: 3, Max: 3}, []int64{3}},
		{IntRange{Min: 100, Max: 300}, []int64{100, 128, 256, 300}},
		{IntRange{Values: []int64{4096, 1024, 1024}}, []int64{1024, 4096}},
	} {
		if got := tc.r.Levels(); !slices.Equal(got, tc.want) {
			t.Errorf("Levels(%+v) = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func nil2(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

func TestMutateMovesWholeRequestVector(t *testing.T) {
	sp := DefaultSpace()
	lv := sp.msgLevels()
	r := rand.New(rand.NewPCG(8, 9))
	base := Workload{Traffics: []Traffic{{Direction: Uni, Memory: "dram-local", NumMRs: 1, MRSize: 4 << 20, QPType: "RC",
		Opcode: "WRITE", NumQPs: 1, MTU: 4096, WQDepth: 64, WQEBatch: 1, SGEPerWQE: 1,
		MessageSizes: []int64{1024, 4096, 16384, 65536}}}}
	shifted, same := 0, 0
	for range 20000 {
		n := sp.Mutate(r, base)
		if len(n.Traffics) != 1 {
			continue
		}
		got := n.Traffics[0].MessageSizes
		if len(got) != 4 {
			continue
		}
		// Every size moved by the same number of levels (a local shift),
		// or all sizes set to one level (a jump).
		k := nearestIndex(lv, got[0]) - nearestIndex(lv, 1024)
		all := k != 0
		for i, v := range got {
			if nearestIndex(lv, v)-nearestIndex(lv, base.Traffics[0].MessageSizes[i]) != k {
				all = false
			}
		}
		if all {
			shifted++
		}
		if got[0] == got[1] && got[1] == got[2] && got[2] == got[3] {
			same++
		}
	}
	if shifted == 0 || same == 0 {
		t.Errorf("whole-vector mutations: %d shifts, %d jumps to one level in 20000; want both > 0", shifted, same)
	}
}
