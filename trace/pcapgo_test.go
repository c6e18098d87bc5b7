// Cross-checks against an independent implementation, gopacket's pcapgo:
// files we write are read by pcapgo and files pcapgo writes are read by us.

package trace

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// xPacket is a packet as both implementations can describe it.
type xPacket struct {
	ts      int64
	data    []byte
	origLen int
	link    LinkType
}

// xPackets returns packets of sizes 0, 1, 60, 1518 and 9000 bytes with
// distinct nanosecond timestamps and original lengths.
func xPackets() []xPacket {
	var ps []xPacket
	for i, size := range []int{0, 1, 60, 1518, 9000} {
		ps = append(ps, xPacket{ts: t0Nsec + int64(i)*1_000_001_001, data: seq(i, size), origLen: size + i})
	}
	return ps
}

// ourPackets reads in with our reader.
func ourPackets(t *testing.T, in []byte) []xPacket {
	t.Helper()
	_, pkts, err := readAll(in)
	if err != nil {
		t.Fatalf("our reader: %v", err)
	}
	var ps []xPacket
	for _, p := range pkts {
		ps = append(ps, xPacket{ts: p.TimeNs, data: p.Data, origLen: p.OrigLen, link: p.LinkType})
	}
	return ps
}

// gopacketSource is what pcapgo's two readers have in common.
type gopacketSource interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

func theirPackets(t *testing.T, r gopacketSource, link LinkType) []xPacket {
	t.Helper()
	var ps []xPacket
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return ps
		}
		if err != nil {
			t.Fatalf("pcapgo reader: %v", err)
		}
		if ci.CaptureLength != len(data) {
			t.Fatalf("pcapgo: CaptureLength %d != len(data) %d", ci.CaptureLength, len(data))
		}
		ps = append(ps, xPacket{ts: ci.Timestamp.UnixNano(), data: data, origLen: ci.Length, link: link})
	}
}

func compareX(t *testing.T, got, want []xPacket) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d packets, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ts != w.ts || !bytes.Equal(g.data, w.data) || g.origLen != w.origLen || g.link != w.link {
			t.Errorf("packet %d = (t=%d, %d bytes, orig %d, %v), want (t=%d, %d bytes, orig %d, %v); data equal: %v",
				i, g.ts, len(g.data), g.origLen, g.link, w.ts, len(w.data), w.origLen, w.link, bytes.Equal(g.data, w.data))
		}
	}
}

// TestPcapgoReadsOurFiles writes with our writers and reads with pcapgo.
func TestPcapgoReadsOurFiles(t *testing.T) {
	for _, format := range []Format{FormatPcap, FormatPcapng} {
		for _, snaplen := range []int{0, 128} {
			t.Run(fmt.Sprintf("%s/snaplen=%d", format, snaplen), func(t *testing.T) {
				var buf bytes.Buffer
				w, err := newWriter(format, &buf, snaplen, LinkTypeEthernet)
				if err != nil {
					t.Fatal(err)
				}
				var want []xPacket
				for _, p := range xPackets() {
					if err := w.WritePacket(p.ts, p.data, p.origLen); err != nil {
						t.Fatal(err)
					}
					if snaplen > 0 && len(p.data) > snaplen {
						p.data = p.data[:snaplen]
					}
					p.link = LinkTypeEthernet
					want = append(want, p)
				}
				var src gopacketSource
				if format == FormatPcap {
					r, err := pcapgo.NewReader(bytes.NewReader(buf.Bytes()))
					if err != nil {
						t.Fatalf("pcapgo.NewReader: %v", err)
					}
					if r.Resolution().ToDuration() != time.Nanosecond || r.LinkType() != layers.LinkTypeEthernet {
						t.Errorf("pcapgo reports resolution %v, link type %v; want 1ns, Ethernet", r.Resolution(), r.LinkType())
					}
					wantSnap := snaplen
					if wantSnap == 0 {
						wantSnap = DefaultSnaplen
					}
					if int(r.Snaplen()) != wantSnap {
						t.Errorf("pcapgo Snaplen() = %d, want %d", r.Snaplen(), wantSnap)
					}
					src = r
				} else {
					r, err := pcapgo.NewNgReader(bytes.NewReader(buf.Bytes()), pcapgo.DefaultNgReaderOptions)
					if err != nil {
						t.Fatalf("pcapgo.NewNgReader: %v", err)
					}
					if r.LinkType() != layers.LinkTypeEthernet {
						t.Errorf("pcapgo LinkType() = %v, want Ethernet", r.LinkType())
					}
					src = r
				}
				compareX(t, theirPackets(t, src, LinkTypeEthernet), want)
				compareX(t, ourPackets(t, buf.Bytes()), want)
			})
		}
	}
}

// TestOurReaderReadsPcapgoFiles writes with pcapgo and reads with ours.
func TestOurReaderReadsPcapgoFiles(t *testing.T) {
	ci := func(p xPacket) gopacket.CaptureInfo {
		return gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.data), Length: p.origLen}
	}
	tests := []struct {
		name  string
		write func(w io.Writer, ps []xPacket) error
		// micro: timestamps are truncated to microseconds.
		micro bool
	}{
		{name: "NewWriterNanos", write: func(w io.Writer, ps []xPacket) error {
			pw := pcapgo.NewWriterNanos(w)
			if err := pw.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
				return err
			}
			for _, p := range ps {
				if err := pw.WritePacket(ci(p), p.data); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "NewWriter microseconds", micro: true, write: func(w io.Writer, ps []xPacket) error {
			pw := pcapgo.NewWriter(w)
			if err := pw.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
				return err
			}
			for _, p := range ps {
				if err := pw.WritePacket(ci(p), p.data); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "NewNgWriter", write: func(w io.Writer, ps []xPacket) error {
			nw, err := pcapgo.NewNgWriter(w, layers.LinkTypeEthernet)
			if err != nil {
				return err
			}
			for _, p := range ps {
				if err := nw.WritePacket(ci(p), p.data); err != nil {
					return err
				}
			}
			return nw.Flush()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := xPackets()
			var buf bytes.Buffer
			if err := tc.write(&buf, ps); err != nil {
				t.Fatalf("pcapgo writer: %v", err)
			}
			for i := range ps {
				ps[i].link = LinkTypeEthernet
				if tc.micro {
					ps[i].ts -= ps[i].ts % 1000
				}
			}
			compareX(t, ourPackets(t, buf.Bytes()), ps)
			r, err := NewReader(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if r.Nanosecond() == tc.micro {
				t.Errorf("Nanosecond() = %v, want %v", r.Nanosecond(), !tc.micro)
			}
		})
	}
}

// TestOurReaderReadsPcapgoMultiInterface has pcapgo write two interfaces
// with different link types, per-packet options and interface statistics.
func TestOurReaderReadsPcapgoMultiInterface(t *testing.T) {
	var buf bytes.Buffer
	nw, err := pcapgo.NewNgWriter(&buf, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := nw.AddInterface(pcapgo.NgInterface{Name: "raw0", LinkType: layers.LinkTypeRaw, SnapLength: 1000, TimestampResolution: 9})
	if err != nil {
		t.Fatal(err)
	}
	var want []xPacket
	for i, p := range xPackets() {
		c := gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.data), Length: p.origLen}
		p.link = LinkTypeEthernet
		if i%2 == 1 {
			c.InterfaceIndex = raw
			p.link = LinkTypeRaw
		}
		comment := "packet " + fmt.Sprint(i)
		if err := nw.WritePacketWithOptions(c, p.data, pcapgo.NgPacketOptions{Comments: []string{comment}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	if err := nw.WriteInterfaceStats(raw, pcapgo.NgInterfaceStatistics{PacketsReceived: 3}); err != nil {
		t.Fatal(err)
	}
	if err := nw.Flush(); err != nil {
		t.Fatal(err)
	}
	compareX(t, ourPackets(t, buf.Bytes()), want)
}
