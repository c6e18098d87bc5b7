package model_test

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// decodeFrames are frames of every kind the decoder sees: WRITE, SEND and
// READ connections with ACKs, NAKs, RNR NAKs, CNPs, READ requests and
// responses, switch events, wrapped PFC copies; as restored mirror copies,
// raw ones (to the mirror port), foreign captures, whole and cut at every
// length.
func decodeFrames(t testing.TB) (conns []model.Connection, frames [][]byte) {
	conns = append(tracetest.Conns(2, 10, model.VerbWrite), tracetest.Conns(1, 1<<24-3, model.VerbRead)...)
	for i := range conns {
		conns[i].ID = i
	}
	conns[2].Requester.QPN, conns[2].Responder.QPN = 0x300, 0x301
	script := "0 1a A1#1 2x 3 N2#1 2 3e C A3#2 4d 5c R5:14#2 5 A5#3 F6 s7 1/0 1/1o 1/A1 1/1+ 2/Q0:3 2/r0 2/r1 2/r2 2/Cr 2/Q3:1 2/R3 2/Q3:1 2/r3"
	fr, err := tracetest.Frames(conns, script, tracetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fr = append(fr, tracetest.PFC(100, true, 3, 3, 0xFFFF))
	for i, f := range fr {
		if f.Wrapped {
			frames = append(frames, roce.AppendMACMirror(nil, roce.MirrorMeta{Seq: uint64(i), TimestampNs: uint64(f.TimeNs)}, f.Sent, f.Port, f.Data))
			continue
		}
		frames = append(frames, bytes.Clone(f.Data)) // foreign
		raw := bytes.Clone(f.Data)
		if !roce.ApplyMirror(raw, roce.MirrorMeta{Seq: uint64(i), Switch: uint8(i % 3), TimestampNs: uint64(f.TimeNs), Event: f.Event, QDepth: int64(i) * 1000, HoldNs: int64(i) * 300}, roce.DefaultMirrorPort, 0x1234) {
			t.Fatal("ApplyMirror failed")
		}
		restored := bytes.Clone(raw)
		roce.RestoreMirror(restored, roce.DefaultMirrorPort)
		frames = append(frames, raw, restored)
	}
	n := len(frames)
	for _, f := range frames[:n] {
		for l := range len(f) {
			frames = append(frames, f[:l:l])
		}
	}
	return conns, frames
}

// mutate returns variants of f: bytes of the headers changed, VLAN tags,
// IPv6, other lengths.
func mutate(rng *rand.Rand, f []byte) []byte {
	g := bytes.Clone(f)
	if len(g) == 0 {
		return g
	}
	switch rng.IntN(4) {
	case 0: // any byte of the headers
		i := rng.IntN(min(len(g), 80))
		g[i] ^= byte(1 << rng.IntN(8))
	case 1: // any value of a length, port, protocol or version field
		for _, i := range []int{12, 13, 14, 16, 17, 20, 23, 36, 37, 38, 39, 42, 43, 54, 70} {
			if i < len(g) && rng.IntN(4) == 0 {
				g[i] = byte(rng.IntN(256))
			}
		}
	case 2: // a VLAN tag
		g = append(append(bytes.Clone(g[:min(12, len(g))]), 0x81, 0, 0, 5), g[min(12, len(g)):]...)
	case 3: // another opcode
		if len(g) > 42 {
			g[42] = byte(rng.IntN(256))
		}
	}
	return g
}

// dirty sets every field of p to a value that is not its zero value.
func dirty(p *model.Pkt) {
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(-7)
		case reflect.Uint8, reflect.Uint32:
			f.SetUint(7)
		case reflect.Bool:
			f.SetBool(true)
		default:
			f.Set(reflect.ValueOf(model.IPFrom(netip.MustParseAddr("fd00::7"))))
		}
	}
}

// TestDecodeFast: the decoder's fast path (which reads the fields of
// common frames without parsing them) decodes every frame, and every
// variant of one, as parsing it does; a frame it reads parses, and
// Packet returns it parsed.
func TestDecodeFast(t *testing.T) {
	conns, frames := decodeFrames(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3 {
		for _, f := range frames[:len(frames)/4] {
			frames = append(frames, mutate(rng, f))
		}
	}
	tab := model.NewTable(conns)
	for _, mirror := range []bool{true, false} {
		for _, holds := range []bool{true, false} {
			for _, port := range []uint16{roce.DefaultMirrorPort, 0} {
				fast := model.Decoder{Parser: roce.Parser{MirrorPort: port}, Mirror: mirror, Holds: holds, MTU: 1024, Table: tab}
				slow := fast
				model.SetSlow(&slow)
				fastN := 0
				for i, f := range frames {
					tp := trace.Packet{Index: i, TimeNs: int64(i) * 7, Data: f, OrigLen: len(f) + i%2*100, LinkType: trace.LinkTypeEthernet}
					var pf, ps, pd model.Pkt
					again := fast // in the same state: decodes the frame again below
					okf, oks := fast.Decode(&tp, &pf), slow.Decode(&tp, &ps)
					if okf != oks || pf != ps {
						t.Fatalf("mirror %v holds %v port %d frame %d (% x):\nfast %v %+v\nslow %v %+v", mirror, holds, port, i, f, okf, pf, oks, ps)
					}
					dirty(&pd) // the fast path sets every field (no zeroing first)
					if again.Decode(&tp, &pd) && pd != pf {
						t.Fatalf("frame %d decoded over another packet:\n%+v\nwant %+v", i, pd, pf)
					}
					if okf {
						fastN++
						var want roce.Packet
						if err := fast.Parser.Parse(f, tp.OrigLen, &want); err != nil {
							t.Fatalf("frame %d: decoded but does not parse: %v", i, err)
						}
						if got := fast.Packet(); got.Opcode != want.Opcode || !bytes.Equal(got.Frame, want.Frame) || got.UDPSrc != want.UDPSrc || got.ICRCOff != want.ICRCOff {
							t.Fatalf("frame %d: Packet() = %+v, want %+v", i, got, want)
						}
					}
				}
				if fastN < len(frames)/4 {
					t.Errorf("only %d of %d frames decoded", fastN, len(frames))
				}
			}
		}
	}
}

// TestDecodeAllocs: decoding allocates nothing.
func TestDecodeAllocs(t *testing.T) {
	conns, frames := decodeFrames(t)
	d := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, Mirror: true, MTU: 1024, Table: model.NewTable(conns)}
	i := 0
	var p model.Pkt
	if n := testing.AllocsPerRun(10_000, func() {
		tp := trace.Packet{Index: i, Data: frames[i%len(frames)], LinkType: trace.LinkTypeEthernet}
		d.Decode(&tp, &p)
		i++
	}); n != 0 {
		t.Errorf("Decode allocates %v times per frame", n)
	}
}

// FuzzDecodeFast compares the fast path with parsing on any frame.
func FuzzDecodeFast(f *testing.F) {
	conns, frames := decodeFrames(f)
	for _, fr := range frames[:40] {
		f.Add(fr, uint16(roce.DefaultMirrorPort))
	}
	tab := model.NewTable(conns)
	f.Fuzz(func(t *testing.T, frame []byte, port uint16) {
		fast := model.Decoder{Parser: roce.Parser{MirrorPort: port}, Mirror: true, Holds: true, MTU: 1024, Table: tab}
		slow := fast
		model.SetSlow(&slow)
		tp := trace.Packet{Data: frame, LinkType: trace.LinkTypeEthernet}
		var pf, ps model.Pkt
		if okf, oks := fast.Decode(&tp, &pf), slow.Decode(&tp, &ps); okf != oks || pf != ps {
			t.Fatalf("fast %v %+v\nslow %v %+v", okf, pf, oks, ps)
		}
	})
}

// TestDecodeTableChange: a decoder given another table assigns with it
// (its cache of connections is the old table's).
func TestDecodeTableChange(t *testing.T) {
	conns, frames := decodeFrames(t)
	d := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, Mirror: true, MTU: 1024, Table: model.NewTable(conns)}
	tp := trace.Packet{Data: frames[1], LinkType: trace.LinkTypeEthernet} // a raw copy of conns[0]'s first packet
	var p model.Pkt
	if !d.Decode(&tp, &p) || p.Conn != 0 {
		t.Fatalf("conn %d, want 0", p.Conn)
	}
	d.Table = model.NewTable(conns[1:])
	if !d.Decode(&tp, &p) || p.Conn != -1 {
		t.Fatalf("with a table without it: conn %d, want -1", p.Conn)
	}
	d.Table = model.NewTable(append(conns[1:2:2], conns[0]))
	if !d.Decode(&tp, &p) || p.Conn != 1 {
		t.Fatalf("with it second: conn %d, want 1", p.Conn)
	}
}

// TestDecodeOtherUnassigned: a packet of kind other gets no connection,
// even with the keys of an empty entry of the connection cache (zero
// addresses, QPN 0), after packets that filled the cache.
func TestDecodeOtherUnassigned(t *testing.T) {
	zero := netip.IPv4Unspecified()
	conns := []model.Connection{{Requester: model.Endpoint{IP: zero, QPN: 1}, Responder: model.Endpoint{IP: zero, QPN: 0}}}
	d := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: 1024, Table: model.NewTable(conns)}
	for _, spec := range []roce.FrameSpec{
		{SrcIP: zero, DstIP: zero, DestQP: 0, Opcode: roce.RCWriteOnly, Payload: make([]byte, 8)}, // conn 0: fills the cache
		{SrcIP: zero, DstIP: zero, DestQP: 0, Opcode: roce.RCFetchAdd},                            // other
	} {
		frame, err := spec.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		var p model.Pkt
		if !d.Decode(&trace.Packet{Data: frame, LinkType: trace.LinkTypeEthernet}, &p) {
			t.Fatalf("%v: not decoded", spec.Opcode)
		}
		if want := map[model.Kind]int{model.KindData: 0, model.KindOther: -1}[p.Kind]; p.Conn != want {
			t.Errorf("%v (%v): conn %d, want %d", spec.Opcode, p.Kind, p.Conn, want)
		}
	}
}
