//go:build linux

package dumper

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// runBPF runs a classic BPF program on frame as the kernel's socket filter
// does for the instructions mirrorFilter uses: a load beyond the frame ends
// the program with 0 (drop). It fails the test on any other instruction, on
// a jump out of the program and on falling off its end.
func runBPF(t *testing.T, prog []unix.SockFilter, frame []byte) uint32 {
	t.Helper()
	var a, x uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		load := func(off uint32, size uint32) (uint32, bool) {
			if uint64(off)+uint64(size) > uint64(len(frame)) {
				return 0, false
			}
			switch size {
			case 1:
				return uint32(frame[off]), true
			case 2:
				return uint32(binary.BigEndian.Uint16(frame[off:])), true
			}
			return binary.BigEndian.Uint32(frame[off:]), true
		}
		var ok bool
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case unix.BPF_LD | unix.BPF_H | unix.BPF_ABS:
			if a, ok = load(in.K, 2); !ok {
				return 0
			}
		case unix.BPF_LD | unix.BPF_B | unix.BPF_ABS:
			if a, ok = load(in.K, 1); !ok {
				return 0
			}
		case unix.BPF_LD | unix.BPF_H | unix.BPF_IND:
			if a, ok = load(x+in.K, 2); !ok {
				return 0
			}
		case unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH:
			b, ok := load(in.K, 1)
			if !ok {
				return 0
			}
			x = 4 * (b & 0xf)
		case unix.BPF_LD | unix.BPF_W | unix.BPF_LEN:
			a = uint32(len(frame))
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(a == in.K)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			jump(a >= in.K)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(a&in.K != 0)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: opcode %#x not handled", pc, in.Code)
		}
		if pc+1 >= len(prog) {
			t.Fatalf("instruction %d jumps or falls off the end of a %d-instruction program", pc, len(prog))
		}
	}
	t.Fatal("program ended without returning")
	return 0
}

// TestMirrorFilter runs the afpacket BPF program on each kind of frame and
// compares its decision with isMirrorCopy, the sim backend's filter, and
// with what the test says.
func TestMirrorFilter(t *testing.T) {
	const port, snap = roce.DefaultMirrorPort, 200
	prog := mirrorFilter(port, snap)
	s, _ := NewMirrorStream(130, port)
	v4 := s.Frame(nil, 5)
	v4opts := func() []byte { // IHL 6: a 4-byte IP option before UDP
		f := append(append([]byte(nil), v4[:34]...), 1, 1, 1, 0)
		f = append(f, v4[34:]...)
		f[14] = 0x46
		return f
	}()
	frag := append([]byte(nil), v4...)
	frag[20] |= 0x20 // more fragments, offset 0: the first fragment is kept
	later := append([]byte(nil), v4...)
	later[21] = 0x10 // a later fragment: no UDP header
	otherPort := append([]byte(nil), v4...)
	otherPort[37] ^= 1
	tcp := append([]byte(nil), v4...)
	tcp[23] = 6
	v6spec := roce.FrameSpec{SrcIP: netip.MustParseAddr("fd00::1"), DstIP: netip.MustParseAddr("fd00::2"), UDPSrc: 0xC000, Opcode: roce.RCSendOnly, DestQP: 1, Payload: []byte{1, 2, 3, 4}}
	v6, err := v6spec.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !roce.ApplyMirror(v6, roce.MirrorMeta{Seq: 6}, port, 0x9999) {
		t.Fatal("ApplyMirror IPv6")
	}
	v6other := append([]byte(nil), v6...)
	v6other[57] ^= 1
	pfc := roce.BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 0xFFFF})
	wrapped := roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: 7, TimestampNs: 99, Event: roce.EventPause}, true, 3, pfc)
	tagged := append(append(append([]byte(nil), v4[:12]...), 0x81, 0x00, 0x00, 0x05), v4[12:]...)

	for _, tt := range []struct {
		name  string
		frame []byte
		keep  bool
	}{
		{"IPv4 copy", v4, true},
		{"IPv4 copy with IP options", v4opts, true},
		{"IPv4 first fragment", frag, true},
		{"IPv4 later fragment", later, false},
		{"IPv4 other port", otherPort, false},
		{"IPv4 TCP", tcp, false},
		{"IPv4 cut before the UDP port", v4[:36], false},
		{"IPv6 copy", v6, true},
		{"IPv6 other port", v6other, false},
		{"wrapped PFC copy", wrapped, true},
		{"wrapped copy, shortest", wrapped[:trace.MACMirrorMinLen], true},
		{"wrapped copy, too short", wrapped[:trace.MACMirrorMinLen-1], false},
		{"raw PFC frame", pfc, false},
		{"original RoCE frame (port 4791)", s.Original(nil, 1), false},
		{"runt", v4[:13], false},
		{"empty", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := uint32(0)
			if tt.keep {
				want = snap
			}
			if got := runBPF(t, prog, tt.frame); got != want {
				t.Errorf("mirrorFilter(%s) = %d, want %d", tt.name, got, want)
			}
			if got := isMirrorCopy(tt.frame, port); got != tt.keep {
				t.Errorf("isMirrorCopy(%s) = %v, want %v", tt.name, got, tt.keep)
			}
		})
	}
	// The kernel strips VLAN tags before the filter runs; isMirrorCopy
	// sees them (sim) and keeps the copy, the filter never sees one.
	if !isMirrorCopy(tagged, port) {
		t.Error("isMirrorCopy(VLAN-tagged IPv4 copy) = false")
	}
}
