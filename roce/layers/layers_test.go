package layers

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	gl "github.com/gopacket/gopacket/layers"

	"github.com/netlumina/lumina/roce"
)

func vectors(t testing.TB) [][]byte {
	f, err := os.Open("../testdata/roce-vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			b, err := hex.DecodeString(l)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// TestDecodeMatchesRoce decodes every vector through gopacket and compares
// with package roce's parser.
func TestDecodeMatchesRoce(t *testing.T) {
	for i, frame := range vectors(t) {
		pkt := gopacket.NewPacket(frame, gl.LayerTypeEthernet, gopacket.Default)
		l, ok := pkt.Layer(LayerTypeRoCE).(*RoCE)
		if !ok {
			t.Fatalf("vector %d: no RoCE layer in %v", i, pkt)
		}
		var p roce.Packet
		if err := (&roce.Parser{}).Parse(frame, 0, &p); err != nil {
			t.Fatal(err)
		}
		if l.Opcode != p.Opcode || l.PSN != p.BTH.PSN() || l.DestQP != p.BTH.DestQP() || l.AckReq != p.BTH.AckReq() ||
			l.BECN != p.BTH.BECN() || l.ICRC != p.ICRCOnWire || !bytes.Equal(l.Payload, p.Payload) || int(l.PadCount) != p.PadLen {
			t.Errorf("vector %d: gopacket %+v disagrees with roce %+v", i, l, p)
		}
		if p.AETH != nil && (l.AETH.Syndrome != p.AETH.Syndrome() || l.AETH.MSN != p.AETH.MSN()) {
			t.Errorf("vector %d: AETH = %+v", i, l.AETH)
		}
		if p.RETH != nil && (l.RETH.VA != p.RETH.VirtualAddress() || l.RETH.Length != p.RETH.DMALength()) {
			t.Errorf("vector %d: RETH = %+v", i, l.RETH)
		}
	}
}

// TestDecodingLayerParser uses the zero-allocation DecodingLayerParser path.
func TestDecodingLayerParser(t *testing.T) {
	var (
		eth gl.Ethernet
		ip4 gl.IPv4
		udp gl.UDP
		r   RoCE
		pl  gopacket.Payload
	)
	parser := gopacket.NewDecodingLayerParser(gl.LayerTypeEthernet, &eth, &ip4, &udp, &r, &pl)
	var decoded []gopacket.LayerType
	for i, frame := range vectors(t) {
		if err := parser.DecodeLayers(frame, &decoded); err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if !containsType(decoded, LayerTypeRoCE) {
			t.Fatalf("vector %d: decoded %v, no RoCE", i, decoded)
		}
	}
}

func containsType(ts []gopacket.LayerType, want gopacket.LayerType) bool {
	for _, t := range ts {
		if t == want {
			return true
		}
	}
	return false
}

// TestSerializeVector rebuilds the WRITE ONLY vector with gopacket layers.
func TestSerializeVector(t *testing.T) {
	want := vectors(t)[1]
	eth := &gl.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: gl.EthernetTypeIPv4}
	ip := &gl.IPv4{Version: 4, IHL: 5, TOS: 2, Flags: gl.IPv4DontFragment, TTL: 64, Protocol: gl.IPProtocolUDP,
		SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	udp := &gl.UDP{SrcPort: 0xC001, DstPort: roce.UDPPort}
	r := &RoCE{Opcode: roce.RCWriteOnly, PKey: 0xFFFF, DestQP: 0x22, AckReq: true, PSN: 0x123456,
		RETH: roce.RETHFields{VA: 0x7f0000001000, RKey: 0x1234, Length: 16}}
	buf := gopacket.NewSerializeBuffer()
	payload := gopacket.Payload([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, eth, ip, udp, r, payload); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	h := got[14:34]
	h[10], h[11] = 0, 0
	c := roce.IPv4Checksum(h)
	h[10], h[11] = byte(c>>8), byte(c)
	if !FixICRC(got) {
		t.Fatal("FixICRC failed")
	}
	if !bytes.Equal(got, want) {
		t.Errorf("serialized\n%x\nwant\n%x", got, want)
	}

	// SEND with odd payload: FixLengths sets the pad.
	r2 := &RoCE{Opcode: roce.RCSendOnly, PKey: 0xFFFF, DestQP: 0x22, AckReq: true, PSN: 0x123457}
	buf2 := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf2, gopacket.SerializeOptions{FixLengths: true}, r2, gopacket.Payload("hello, world!")); err != nil {
		t.Fatal(err)
	}
	if r2.PadCount != 3 || len(buf2.Bytes()) != 12+13+3+4 {
		t.Errorf("pad = %d, len = %d; want 3, 32", r2.PadCount, len(buf2.Bytes()))
	}
}

func TestTruncated(t *testing.T) {
	frame := vectors(t)[1]
	var r RoCE
	if err := r.DecodeFromBytes(frame[42:50], gopacket.NilDecodeFeedback); err == nil {
		t.Error("8-byte BTH decoded")
	}
	if err := r.DecodeFromBytes(frame[42:60], gopacket.NilDecodeFeedback); err == nil {
		t.Error("WRITE_ONLY without full RETH decoded")
	}
}
