package roce

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

var (
	pfcSrc   = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	pauseSrc = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildMACControlBytes checks the builders byte for byte against frames
// written out from the 802.3 Annex 31B/31D layout.
func TestBuildMACControlBytes(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{
			name: "pfc p0 xon p3 xoff p5 disabled",
			got:  BuildPFC(nil, pfcSrc, 0x09, [8]uint16{3: 0xFFFF, 5: 7}),
			want: "0180c2000001 020000000001 8808 0101 0009" +
				" 0000 0000 0000 ffff 0000 0007 0000 0000" + strings.Repeat(" 00", 26),
		},
		{
			name: "pfc all priorities",
			got:  BuildPFC(nil, pfcSrc, 0xFF, [8]uint16{1, 2, 3, 4, 0x1000, 0x2000, 0x8000, 0xFFFF}),
			want: "0180c2000001 020000000001 8808 0101 00ff" +
				" 0001 0002 0003 0004 1000 2000 8000 ffff" + strings.Repeat(" 00", 26),
		},
		{
			name: "pause xoff",
			got:  BuildPause(nil, pauseSrc, 0xFFFF),
			want: "0180c2000001 020000000002 8808 0001 ffff" + strings.Repeat(" 00", 42),
		},
		{
			name: "pause xon",
			got:  BuildPause(nil, pauseSrc, 0),
			want: "0180c2000001 020000000002 8808 0001 0000" + strings.Repeat(" 00", 42),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := mustHex(t, tt.want)
			if len(want) != MACControlMinLen {
				t.Fatalf("test vector is %d bytes, want %d", len(want), MACControlMinLen)
			}
			if !bytes.Equal(tt.got, want) {
				t.Errorf("frame = %x, want %x", tt.got, want)
			}
		})
	}
}

// TestBuildMACControlAppends checks that the builders append after existing
// bytes and zero the pad even when dst's spare capacity holds garbage.
func TestBuildMACControlAppends(t *testing.T) {
	buf := bytes.Repeat([]byte{0xEE}, 1+MACControlMinLen)[:1]
	got := BuildPause(buf, pauseSrc, 0x1234)
	want := append([]byte{0xEE}, mustHex(t, "0180c2000001 020000000002 8808 0001 1234"+strings.Repeat(" 00", 42))...)
	if !bytes.Equal(got, want) {
		t.Errorf("BuildPause(prefix) = %x, want %x", got, want)
	}
	if &got[0] != &buf[0] {
		t.Error("BuildPause reallocated although dst had room")
	}
	if n := testing.AllocsPerRun(100, func() {
		got = BuildPFC(got[:0], pfcSrc, 0x08, [8]uint16{3: 0xFFFF})
	}); n != 0 {
		t.Errorf("BuildPFC allocs = %v, want 0", n)
	}
}

func TestMACControlView(t *testing.T) {
	m := MACControl(make([]byte, PFCLen))
	m.SetOpcode(MACControlPFC)
	m.SetPriorityEnableVector(0x01A5)
	for p := range PFCPriorities {
		m.SetTime(p, uint16(0x1100*p+p))
	}
	if got, want := []byte(m), mustHex(t, "0101 01a5 0000 1101 2202 3303 4404 5505 6606 7707"); !bytes.Equal(got, want) {
		t.Errorf("PFC view bytes = %x, want %x", got, want)
	}
	if got := m.Opcode(); got != MACControlPFC {
		t.Errorf("Opcode() = %v, want PFC", got)
	}
	if got := m.PriorityEnableVector(); got != 0x01A5 {
		t.Errorf("PriorityEnableVector() = %#x, want 0x1a5", got)
	}
	for p := range PFCPriorities {
		if got, want := m.Time(p), uint16(0x1100*p+p); got != want {
			t.Errorf("Time(%d) = %#x, want %#x", p, got, want)
		}
	}
	pm := MACControl(make([]byte, PauseLen))
	pm.SetOpcode(MACControlPause)
	pm.SetPauseTime(0xBEEF)
	if got, want := []byte(pm), mustHex(t, "0001 beef"); !bytes.Equal(got, want) {
		t.Errorf("PAUSE view bytes = %x, want %x", got, want)
	}
	if pm.Opcode() != MACControlPause || pm.PauseTime() != 0xBEEF {
		t.Errorf("PAUSE view = %v %#x, want PAUSE 0xbeef", pm.Opcode(), pm.PauseTime())
	}
}

func TestMACControlOpcodeString(t *testing.T) {
	for op, want := range map[MACControlOpcode]string{
		MACControlPause: "PAUSE",
		MACControlPFC:   "PFC",
		0:               "MAC_CONTROL_0x0000",
		2:               "MAC_CONTROL_0x0002",
		0xFFFF:          "MAC_CONTROL_0xffff",
	} {
		if got := op.String(); got != want {
			t.Errorf("MACControlOpcode(%#x).String() = %q, want %q", uint16(op), got, want)
		}
	}
}

func TestParseMACControl(t *testing.T) {
	pfc := BuildPFC(nil, pfcSrc, 0x09, [8]uint16{3: 0xFFFF, 5: 7})
	tagged := append(append(append([]byte(nil), pfc[:12]...), 0x81, 0x00, 0x60, 0x64), pfc[12:]...)
	reserved := bytes.Clone(pfc)
	reserved[16] = 0x01 // high octet of the enable vector
	unknown := bytes.Clone(pfc)
	unknown[15] = 0x02
	tests := []struct {
		name   string
		frame  []byte
		err    error
		op     MACControlOpcode
		vlans  int
		pause  uint16
		enable uint16
		times  [8]uint16
		pduLen int
	}{
		{name: "pfc", frame: pfc, op: MACControlPFC, enable: 0x09, times: [8]uint16{3: 0xFFFF, 5: 7}, pduLen: 46},
		{name: "pfc unpadded", frame: pfc[:EthernetLen+PFCLen], op: MACControlPFC, enable: 0x09,
			times: [8]uint16{3: 0xFFFF, 5: 7}, pduLen: PFCLen},
		{name: "pfc with fcs", frame: append(bytes.Clone(pfc), 1, 2, 3, 4), op: MACControlPFC, enable: 0x09,
			times: [8]uint16{3: 0xFFFF, 5: 7}, pduLen: 50},
		{name: "pfc vlan tagged", frame: tagged, op: MACControlPFC, vlans: 1, enable: 0x09,
			times: [8]uint16{3: 0xFFFF, 5: 7}, pduLen: 46},
		{name: "pfc reserved octet", frame: reserved, op: MACControlPFC, enable: 0x0109,
			times: [8]uint16{3: 0xFFFF, 5: 7}, pduLen: 46},
		{name: "pause", frame: BuildPause(nil, pauseSrc, 0x1234), op: MACControlPause, pause: 0x1234, pduLen: 46},
		{name: "pause unpadded", frame: BuildPause(nil, pauseSrc, 9)[:EthernetLen+PauseLen], op: MACControlPause,
			pause: 9, pduLen: PauseLen},
		{name: "unknown opcode", frame: unknown, err: ErrMACControlOpcode, op: 0x0102, pduLen: 46},
		{name: "pfc cut in time[7]", frame: pfc[:EthernetLen+PFCLen-1], err: ErrMACControlTruncated, op: MACControlPFC,
			pduLen: PFCLen - 1},
		{name: "pause cut", frame: BuildPause(nil, pauseSrc, 1)[:EthernetLen+PauseLen-1], err: ErrMACControlTruncated,
			op: MACControlPause, pduLen: PauseLen - 1},
		{name: "opcode cut", frame: pfc[:EthernetLen+1], err: ErrMACControlTruncated},
		{name: "no ethertype", frame: pfc[:13], err: ErrMACControlTruncated},
		{name: "empty", frame: nil, err: ErrMACControlTruncated},
		{name: "vlan cut", frame: tagged[:15], err: ErrMACControlTruncated},
		{name: "ipv4", frame: append(append(bytes.Clone(pfc[:12]), 0x08, 0x00), make([]byte, 46)...), err: ErrNotMACControl},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f MACControlFrame
			err := ParseMACControl(tt.frame, &f)
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("ParseMACControl = %v, want %v", err, tt.err)
			}
			if f.Opcode != tt.op || f.VLANs != tt.vlans || f.PauseTime != tt.pause || f.EnableVector != tt.enable ||
				f.Time != tt.times || len(f.PDU) != tt.pduLen {
				t.Errorf("ParseMACControl = {op %v vlans %d pause %#x enable %#x time %v pdu %d}, "+
					"want {op %v vlans %d pause %#x enable %#x time %v pdu %d}",
					f.Opcode, f.VLANs, f.PauseTime, f.EnableVector, f.Time, len(f.PDU),
					tt.op, tt.vlans, tt.pause, tt.enable, tt.times, tt.pduLen)
			}
			if len(tt.frame) >= EthernetLen && (f.SrcMAC != [6]byte(tt.frame[6:12]) || f.DstMAC != [6]byte(tt.frame[0:6])) {
				t.Errorf("MACs = %x > %x, want %x > %x", f.SrcMAC, f.DstMAC, tt.frame[6:12], tt.frame[0:6])
			}
			if len(tt.frame) > 0 && &f.Frame[0] != &tt.frame[0] {
				t.Error("Frame does not alias the input")
			}
		})
	}
}

func TestMACControlEnabled(t *testing.T) {
	f := MACControlFrame{EnableVector: 0xFF81}
	if f.Enable() != 0x81 {
		t.Errorf("Enable() = %#x, want 0x81", f.Enable())
	}
	for p, want := range map[int]bool{-1: false, 0: true, 1: false, 6: false, 7: true, 8: false, 15: false} {
		if got := f.Enabled(p); got != want {
			t.Errorf("Enabled(%d) = %v, want %v", p, got, want)
		}
	}
}

// TestMACControlRoundTrip builds every enable vector with distinct times
// and parses it back.
func TestMACControlRoundTrip(t *testing.T) {
	buf := make([]byte, 0, MACControlMinLen)
	var f MACControlFrame
	for e := range 256 {
		var q [8]uint16
		for p := range q {
			q[p] = uint16(e*257 + p*4099)
		}
		buf = BuildPFC(buf[:0], pfcSrc, uint8(e), q)
		if err := ParseMACControl(buf, &f); err != nil {
			t.Fatalf("enable %#x: %v", e, err)
		}
		if f.Opcode != MACControlPFC || f.EnableVector != uint16(e) || f.Time != q || f.SrcMAC != pfcSrc ||
			f.DstMAC != MACControlDst || len(f.Frame) != MACControlMinLen {
			t.Fatalf("enable %#x: parsed %+v", e, f)
		}
	}
	for _, q := range []uint16{0, 1, 0x7FFF, 0xFFFF} {
		buf = BuildPause(buf[:0], pauseSrc, q)
		if err := ParseMACControl(buf, &f); err != nil || f.Opcode != MACControlPause || f.PauseTime != q ||
			f.SrcMAC != pauseSrc || f.DstMAC != MACControlDst {
			t.Fatalf("pause %d: %v %+v", q, err, f)
		}
	}
}

func TestMACControlString(t *testing.T) {
	withResv := BuildPFC(nil, pfcSrc, 0x08, [8]uint16{3: 100})
	withResv[16] = 0x80
	tagged := BuildPFC(nil, pfcSrc, 0x01, [8]uint16{0: 1})
	tagged = append(append(append([]byte(nil), tagged[:12]...), 0x81, 0x00, 0x00, 0x05), tagged[12:]...)
	unknown := BuildPause(nil, [6]byte{}, 5)
	unknown[15] = 0x03
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"pfc", BuildPFC(nil, pfcSrc, 0x08, [8]uint16{3: 0xFFFF}),
			"PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x08 p3=65535"},
		{"pfc xon and disabled time", BuildPFC(nil, pfcSrc, 0x09, [8]uint16{3: 0xFFFF, 5: 7}),
			"PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x09 p0=0(xon) p3=65535"},
		{"pfc all", BuildPFC(nil, [6]byte{0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}, 0xFF, [8]uint16{0, 1, 2, 3, 4, 5, 6, 65535}),
			"PFC aa:bb:cc:dd:ee:ff > 01:80:c2:00:00:01 enable=0xff p0=0(xon) p1=1 p2=2 p3=3 p4=4 p5=5 p6=6 p7=65535"},
		{"pfc empty vector", BuildPFC(nil, [6]byte{}, 0, [8]uint16{1, 1, 1, 1, 1, 1, 1, 1}),
			"PFC 00:00:00:00:00:00 > 01:80:c2:00:00:01 enable=0x00"},
		{"pfc reserved octet", withResv,
			"PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x08 resv=0x80 p3=100"},
		{"pfc tagged", tagged,
			"PFC 02:00:00:00:00:01 > 01:80:c2:00:00:01 enable=0x01 p0=1 vlans=1"},
		{"pause", BuildPause(nil, pauseSrc, 65535),
			"PAUSE 02:00:00:00:00:02 > 01:80:c2:00:00:01 quanta=65535"},
		{"pause xon", BuildPause(nil, pauseSrc, 0),
			"PAUSE 02:00:00:00:00:02 > 01:80:c2:00:00:01 quanta=0(xon)"},
		{"unknown", unknown,
			"MAC_CONTROL_0x0003 00:00:00:00:00:00 > 01:80:c2:00:00:01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f MACControlFrame
			if err := ParseMACControl(tt.frame, &f); err != nil && !errors.Is(err, ErrMACControlOpcode) {
				t.Fatal(err)
			}
			if got := f.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMACControlAllocs(t *testing.T) {
	frame := BuildPFC(nil, pfcSrc, 0xFF, [8]uint16{0, 1, 2, 3, 4, 5, 6, 65535})
	var f MACControlFrame
	line := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		if err := ParseMACControl(frame, &f); err != nil {
			t.Fatal(err)
		}
		line = f.AppendText(line[:0])
	}); n != 0 {
		t.Errorf("ParseMACControl + AppendText allocs = %v, want 0", n)
	}
}

func TestQuantaToDuration(t *testing.T) {
	const (
		g10  = 10_000_000_000
		g25  = 25_000_000_000
		g40  = 40_000_000_000
		g100 = 100_000_000_000
		g400 = 400_000_000_000
	)
	tests := []struct {
		quanta uint16
		bps    int64
		want   time.Duration
	}{
		{65535, g10, 3_355_392 * time.Nanosecond}, // 33 553 920 bits / 10 Gb/s, exact
		{65535, g25, 1_342_157 * time.Nanosecond}, // 1 342 156.8 ns, rounded up
		{65535, g40, 838_848 * time.Nanosecond},   // exact
		{65535, g100, 335_540 * time.Nanosecond},  // 335 539.2 ns, rounded up
		{65535, g400, 83_885 * time.Nanosecond},   // 83 884.8 ns, rounded up
		{1, g10, 52 * time.Nanosecond},            // 51.2 ns
		{1, g25, 21 * time.Nanosecond},            // 20.48 ns
		{1, g40, 13 * time.Nanosecond},            // 12.8 ns
		{1, g100, 6 * time.Nanosecond},            // 5.12 ns
		{1, g400, 2 * time.Nanosecond},            // 1.28 ns
		{1000, g100, 5120 * time.Nanosecond},      // exact
		{25, g400, 32 * time.Nanosecond},          // exact
		{1, 1_000_000_000, 512 * time.Nanosecond}, // 1 Gb/s: one bit per ns
		{65535, 1_000_000_000, 33_553_920 * time.Nanosecond},
		{0, g100, 0},
		{65535, 0, 0},
		{65535, -1, 0},
	}
	for _, tt := range tests {
		if got := QuantaToDuration(tt.quanta, tt.bps); got != tt.want {
			t.Errorf("QuantaToDuration(%d, %d) = %v, want %v", tt.quanta, tt.bps, got, tt.want)
		}
	}
}

// TestQuantaToDurationReference compares every quanta value at the common
// link speeds with exact rational arithmetic.
func TestQuantaToDurationReference(t *testing.T) {
	for _, bps := range []int64{1e9, 10e9, 25e9, 40e9, 50e9, 100e9, 200e9, 400e9, 800e9} {
		for q := range 1 << 16 {
			r := new(big.Rat).SetFrac(big.NewInt(int64(q)*512*1e9), big.NewInt(bps))
			want := new(big.Int).Quo(r.Num(), r.Denom())
			if !r.IsInt() {
				want.Add(want, big.NewInt(1))
			}
			if got := QuantaToDuration(uint16(q), bps); int64(got) != want.Int64() {
				t.Fatalf("QuantaToDuration(%d, %d) = %d ns, want %v ns", q, bps, int64(got), want)
			}
		}
	}
}

func TestFrameTOS(t *testing.T) {
	v4 := make([]byte, 34)
	v4[12], v4[13], v4[15] = 0x08, 0x00, 0x6A // DSCP 26, ECN 2
	tagged := append([]byte(nil), v4[:12]...)
	tagged = append(tagged, 0x81, 0x00, 0x00, 0x03)
	tagged = append(tagged, v4[12:]...)
	v6 := make([]byte, 54)
	v6[12], v6[13], v6[14], v6[15] = 0x86, 0xDD, 0x66, 0xA0 // traffic class 0x6A
	for _, tc := range []struct {
		name string
		b    []byte
		want uint8
	}{{"ipv4", v4, 0x6A}, {"vlan", tagged, 0x6A}, {"ipv6", v6, 0x6A}, {"short", v4[:14], 0}, {"arp", append([]byte(nil), v4[:12]...), 0}} {
		if got := FrameTOS(tc.b); got != tc.want {
			t.Errorf("%s: FrameTOS = %#x, want %#x", tc.name, got, tc.want)
		}
	}
}
