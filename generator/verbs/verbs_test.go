package verbs

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

func TestMapStatus(t *testing.T) {
	want := []struct {
		s     generator.Status
		exact bool
	}{
		{generator.StatusSuccess, true}, {generator.StatusLocLenErr, true}, {generator.StatusLocProtErr, false},
		{generator.StatusLocProtErr, false}, {generator.StatusLocProtErr, true}, {generator.StatusWRFlushErr, true},
		{generator.StatusLocProtErr, false}, {generator.StatusRemOpErr, false}, {generator.StatusLocProtErr, false},
		{generator.StatusRemInvReqErr, true}, {generator.StatusRemAccessErr, true}, {generator.StatusRemOpErr, true},
		{generator.StatusRetryExcErr, true}, {generator.StatusRNRRetryExcErr, true}, {generator.StatusLocProtErr, false},
		{generator.StatusRemInvReqErr, false}, {generator.StatusRemOpErr, false}, {generator.StatusLocProtErr, false},
		{generator.StatusLocProtErr, false}, {generator.StatusLocProtErr, false}, {generator.StatusRetryExcErr, false},
		{generator.StatusLocProtErr, false}, {generator.StatusLocProtErr, false}, {generator.StatusLocProtErr, false},
	}
	if len(want) != len(wcStatusNames) {
		t.Fatalf("%d cases for %d statuses", len(want), len(wcStatusNames))
	}
	for raw, w := range want {
		s, exact := MapStatus(uint32(raw))
		if s != w.s || exact != w.exact {
			t.Errorf("MapStatus(%s) = %v, %v, want %v, %v", StatusName(uint32(raw)), s, exact, w.s, w.exact)
		}
		// Exact mappings keep the name.
		if exact && s.String() != StatusName(uint32(raw)) {
			t.Errorf("MapStatus(%s) exact but named %s", StatusName(uint32(raw)), s)
		}
	}
	if s, exact := MapStatus(99); s != generator.StatusLocProtErr || exact || StatusName(99) != "ibv_wc_status(99)" {
		t.Errorf("MapStatus(99) = %v, %v (%s)", s, exact, StatusName(99))
	}
}

func TestCompletionOf(t *testing.T) {
	tests := []struct {
		name  string
		w     rawWC
		p     pending
		known bool
		want  generator.Completion
	}{
		{"write ok", rawWC{WRID: 7, Status: wcSuccess, Opcode: wcOpRDMAWrite, QPN: 0x11},
			pending{userID: 3, comp: generator.CompWrite, length: 4096}, true,
			generator.Completion{QPN: 0x11, WRID: 3, Op: generator.CompWrite, ByteLen: 4096}},
		{"read retry exceeded (opcode invalid on error)", rawWC{WRID: 8, Status: wcRetryExcErr, Opcode: 0xdead, QPN: 0x11},
			pending{userID: 3, comp: generator.CompRead, length: 4096}, true,
			generator.Completion{QPN: 0x11, WRID: 3, Status: generator.StatusRetryExcErr, Op: generator.CompRead}},
		{"recv", rawWC{WRID: 9, Status: wcSuccess, Opcode: wcOpRecv, ByteLen: 1000, QPN: 0x12},
			pending{userID: 0, recv: true, comp: generator.CompRecv, length: 4096}, true,
			generator.Completion{QPN: 0x12, Op: generator.CompRecv, ByteLen: 1000}},
		{"send with imm received", rawWC{WRID: 9, Status: wcSuccess, Opcode: wcOpRecv, ByteLen: 10, QPN: 0x12, Imm: 0x01020304, Flags: wcFlagWithImm},
			pending{userID: 1, recv: true, comp: generator.CompRecv}, true,
			generator.Completion{QPN: 0x12, WRID: 1, Op: generator.CompRecv, ByteLen: 10, Imm: 0x01020304, HasImm: true}},
		{"write with imm received", rawWC{WRID: 9, Status: wcSuccess, Opcode: wcOpRecvRDMAImm, QPN: 0x12, Imm: 5, Flags: wcFlagWithImm},
			pending{userID: 1, recv: true, comp: generator.CompRecv, length: 4096}, true,
			generator.Completion{QPN: 0x12, WRID: 1, Op: generator.CompRecvWithImm, Imm: 5, HasImm: true}},
		{"recv flushed", rawWC{WRID: 9, Status: wcWRFlushErr, QPN: 0x12},
			pending{userID: 1, recv: true, comp: generator.CompRecv}, true,
			generator.Completion{QPN: 0x12, WRID: 1, Status: generator.StatusWRFlushErr, Op: generator.CompRecv}},
		{"unknown wr_id", rawWC{WRID: 99, Status: wcSuccess, Opcode: wcOpSend, QPN: 0x12}, pending{}, false,
			generator.Completion{QPN: 0x12, WRID: 99}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := completionOf(tt.w, tt.p, tt.known); got != tt.want {
				t.Errorf("completionOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResolveAttrs(t *testing.T) {
	ips := []netip.Addr{ip("10.0.0.2"), ip("10.0.0.12")}
	gids := []int{3, 5}
	caps := devCaps{MaxQPRdAtom: 16, MaxQPInitRdAtom: 8, ActiveMTU: 5}
	base := generator.ConnectAttr{RemoteQPN: 0x1234, RemotePSN: 0xabcdef, RemoteIP: ip("10.0.0.3")}
	dgid := [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 0, 14: 0, 15: 3}
	def := qpAttrs{MTU: 3, DestQPN: 0x1234, RQPSN: 0xabcdef, MaxDestRdAtomic: 16, MinRNRTimer: 12, DGID: dgid, SGIDIndex: 3,
		HopLimit: 1, TrafficClass: 2, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 0x42, MaxRdAtomic: 8, LocalIP: ip("10.0.0.2")}
	tests := []struct {
		name    string
		mod     func(a *generator.ConnectAttr)
		caps    devCaps
		want    func(r *qpAttrs)
		wantErr error
	}{
		{"defaults (public tool)", func(*generator.ConnectAttr) {}, caps, func(*qpAttrs) {}, nil},
		{"generator's values", func(a *generator.ConnectAttr) {
			a.LocalIP, a.MTU, a.Timeout, a.RetryCnt = ip("10.0.0.12"), 4096, new(uint8(0)), new(uint8(3))
			a.RNRRetry, a.MinRNRTimer, a.MaxRdAtomic = new(uint8(0)), new(uint8(1)), 4
			a.TrafficClass = new(uint8(26<<2 | 2))
		}, caps, func(r *qpAttrs) {
			r.LocalIP, r.SGIDIndex, r.MTU, r.Timeout, r.RetryCnt, r.RNRRetry, r.MinRNRTimer, r.MaxRdAtomic, r.TrafficClass =
				ip("10.0.0.12"), 5, 5, 0, 3, 0, 1, 4, 26<<2|2
		}, nil},
		// Fukuoka et al., Analyzing Performance Pitfalls of On-Demand
		// Paging of InfiniBand, Figs. 2, 6: min RNR timer 1.28 ms.
		{"ODP paper: min_rnr_timer 14, rnr_retry 7", func(a *generator.ConnectAttr) {
			a.MinRNRTimer, a.RNRRetry = new(uint8(14)), new(uint8(7))
		}, caps, func(r *qpAttrs) { r.MinRNRTimer, r.RNRRetry = 14, 7 }, nil},
		{"min_rnr_timer 0 set (655.36 ms, not the default)", func(a *generator.ConnectAttr) {
			a.MinRNRTimer = new(uint8(0))
		}, caps, func(r *qpAttrs) { r.MinRNRTimer = 0 }, nil},
		{"min_rnr_timer 31, rnr_retry 3", func(a *generator.ConnectAttr) {
			a.MinRNRTimer, a.RNRRetry = new(uint8(31)), new(uint8(3))
		}, caps, func(r *qpAttrs) { r.MinRNRTimer, r.RNRRetry = 31, 3 }, nil},
		// The software RNIC and verbs apply one ConnectAttr.WithDefaults: a
		// value given is the QP's on both (with twin XSet flags, verbs took
		// 14 for a Timeout of 5 given without TimeoutSet, the software RNIC 5).
		{"timeout 5", func(a *generator.ConnectAttr) { a.Timeout = new(uint8(5)) }, caps, func(r *qpAttrs) { r.Timeout = 5 }, nil},
		{"timeout 0 (no timer)", func(a *generator.ConnectAttr) { a.Timeout = new(uint8(0)) }, caps, func(r *qpAttrs) { r.Timeout = 0 }, nil},
		{"unknown caps: no clamping", func(*generator.ConnectAttr) {}, devCaps{}, func(r *qpAttrs) { r.MaxRdAtomic = 16 }, nil},
		{"MTU above the port's", func(a *generator.ConnectAttr) { a.MTU = 4096 }, devCaps{ActiveMTU: 3}, nil, generator.ErrBadConnect},
		{"bad MTU", func(a *generator.ConnectAttr) { a.MTU = 1500 }, caps, nil, generator.ErrBadConnect},
		{"retry_cnt 8", func(a *generator.ConnectAttr) { a.RetryCnt = new(uint8(8)) }, caps, nil, generator.ErrBadConnect},
		{"rnr_retry 8", func(a *generator.ConnectAttr) { a.RNRRetry = new(uint8(8)) }, caps, nil, generator.ErrBadConnect},
		{"timeout 32", func(a *generator.ConnectAttr) { a.Timeout = new(uint8(32)) }, caps, nil, generator.ErrBadConnect},
		{"min_rnr_timer 32", func(a *generator.ConnectAttr) { a.MinRNRTimer = new(uint8(32)) }, caps, nil, generator.ErrBadConnect},
		{"QPN 0", func(a *generator.ConnectAttr) { a.RemoteQPN = 0 }, caps, nil, generator.ErrBadConnect},
		{"QPN 25 bits", func(a *generator.ConnectAttr) { a.RemoteQPN = 1 << 24 }, caps, nil, generator.ErrBadConnect},
		{"no remote IP", func(a *generator.ConnectAttr) { a.RemoteIP = netip.Addr{} }, caps, nil, generator.ErrBadConnect},
		{"IPv6 peer", func(a *generator.ConnectAttr) { a.RemoteIP = ip("fd00::3") }, caps, nil, generator.ErrBadConnect},
		{"unknown local IP", func(a *generator.ConnectAttr) { a.LocalIP = ip("10.0.0.99") }, caps, nil, generator.ErrUnknownAddr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := base
			tt.mod(&a)
			got, err := resolveAttrs(a, ips, gids, tt.caps, roce.PSN(0x42))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("resolveAttrs error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			want := def
			tt.want(&want)
			if err != nil || got != want {
				t.Errorf("resolveAttrs =\n%+v, %v\nwant\n%+v", got, err, want)
			}
		})
	}
}

func TestPSNSource(t *testing.T) {
	a, b := newPSNSource(42), newPSNSource(42)
	seen := map[uint32]bool{}
	for range 1000 {
		x, y := a.next(), b.next()
		if x != y {
			t.Fatalf("same seed, different PSNs %#x %#x", x, y)
		}
		if x > 0xFFFFFF {
			t.Fatalf("PSN %#x exceeds 24 bits", x)
		}
		seen[x] = true
	}
	if len(seen) < 990 {
		t.Errorf("only %d distinct PSNs in 1000", len(seen))
	}
	if newPSNSource(43).next() == newPSNSource(42).next() && newPSNSource(44).next() == newPSNSource(42).next() {
		t.Error("different seeds give the same first PSN")
	}
	// Seed 0 draws a random seed: two such sources give different sequences
	// (equal ones by chance need 4 equal 24-bit draws, probability 2^-96).
	draw := func(s *psnSource) (seq [4]uint32) {
		for i := range seq {
			seq[i] = s.next()
		}
		return seq
	}
	if x, y := draw(newPSNSource(0)), draw(newPSNSource(0)); x == y {
		t.Errorf("seed 0 is not random: two sources both draw %#x", x)
	}
}

func TestTrackerAndBacklog(t *testing.T) {
	var tr tracker
	id1 := tr.add(pending{userID: 0})
	id2 := tr.add(pending{userID: 0, recv: true})
	if id1 == id2 || tr.len() != 2 {
		t.Fatalf("ids %d %d, len %d", id1, id2, tr.len())
	}
	if p, ok := tr.take(id2); !ok || !p.recv {
		t.Errorf("take(%d) = %+v, %v", id2, p, ok)
	}
	if _, ok := tr.take(id2); ok || tr.len() != 1 {
		t.Errorf("second take succeeded or len %d", tr.len())
	}
	var b backlog
	for i := range 3 {
		b.push(generator.RecvWR{ID: uint64(i)})
	}
	for i := range 3 {
		if wr, ok := b.pop(); !ok || wr.ID != uint64(i) {
			t.Errorf("pop = %+v, %v, want ID %d", wr, ok, i)
		}
	}
	if _, ok := b.pop(); ok || b.len() != 0 {
		t.Error("empty backlog popped")
	}
}

func TestCheckWR(t *testing.T) {
	mr := &generator.MR{Buf: make([]byte, 100)}
	tests := []struct {
		name string
		wr   generator.SendWR
		ok   bool
	}{
		{"write", generator.SendWR{Op: generator.WRWrite, Local: mr, Length: 100}, true},
		{"read at offset", generator.SendWR{Op: generator.WRRead, Local: mr, Offset: 50, Length: 50}, true},
		{"send empty", generator.SendWR{Op: generator.WRSendImm, Local: mr}, true},
		{"no opcode", generator.SendWR{Local: mr, Length: 1}, false},
		{"no MR", generator.SendWR{Op: generator.WRWrite, Length: 1}, false},
		{"past the end", generator.SendWR{Op: generator.WRWrite, Local: mr, Offset: 50, Length: 51}, false},
		{"negative", generator.SendWR{Op: generator.WRWrite, Local: mr, Offset: -1, Length: 1}, false},
	}
	for _, tt := range tests {
		err := checkSendWR(tt.wr)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, generator.ErrBadWR) {
			t.Errorf("%s: checkSendWR = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if err := checkRecvWR(generator.RecvWR{MR: mr, Length: 101}); !errors.Is(err, generator.ErrBadWR) {
		t.Errorf("checkRecvWR(too long) = %v", err)
	}
	if err := checkRecvWR(generator.RecvWR{MR: mr, Length: 100}); err != nil {
		t.Errorf("checkRecvWR = %v", err)
	}
	for _, op := range []generator.WROpcode{generator.WRWrite, generator.WRWriteImm, generator.WRSend, generator.WRSendImm, generator.WRRead} {
		if _, comp, ok := wrOpcode(op); !ok || !strings.Contains(op.String(), strings.TrimPrefix(comp.String(), "RDMA_")) {
			t.Errorf("wrOpcode(%v) = %v, %v", op, comp, ok)
		}
	}
}
