package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
	gl "github.com/gopacket/gopacket/layers"

	"github.com/netlumina/lumina/roce"
)

// BenchmarkDecode compares roce.Parser with gopacket's DecodingLayerParser
// (Ethernet/IPv4/UDP/RoCE, the zero-allocation path) on the same 16-byte
// WRITE ONLY frame: the reference for the parser's speed.
func BenchmarkDecode(b *testing.B) {
	frame := vectors(b)[1]
	b.Run("roce.Parser", func(b *testing.B) {
		var p roce.Packet
		pr := roce.Parser{}
		b.ReportAllocs()
		for b.Loop() {
			if err := pr.Parse(frame, 0, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("roce.Parser+ICRC", func(b *testing.B) {
		var p roce.Packet
		pr := roce.Parser{VerifyICRC: true}
		b.ReportAllocs()
		for b.Loop() {
			if err := pr.Parse(frame, 0, &p); err != nil || p.ICRC != roce.ICRCOK {
				b.Fatal(err)
			}
		}
	})
	b.Run("gopacket.DecodingLayerParser", func(b *testing.B) {
		var (
			eth gl.Ethernet
			ip4 gl.IPv4
			udp gl.UDP
			r   RoCE
		)
		var pl gopacket.Payload
		parser := gopacket.NewDecodingLayerParser(gl.LayerTypeEthernet, &eth, &ip4, &udp, &r, &pl)
		decoded := make([]gopacket.LayerType, 0, 8)
		b.ReportAllocs()
		for b.Loop() {
			if err := parser.DecodeLayers(frame, &decoded); err != nil {
				b.Fatal(err)
			}
		}
	})
}
