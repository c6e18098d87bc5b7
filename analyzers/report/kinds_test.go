package report

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
)

var update = flag.Bool("update", false, "rewrite testdata/kinds-*.pcap")

// kindsScript has every kind of packet a time-sequence graph draws: WRITE,
// SEND and READ traffic, ACKs with MSNs and AckReq, NAKs (sequence, fatal,
// RNR), CNPs both ways, and every switch event. PSNs wrap (IPSN 2^24−3).
const kindsScript = "0 1a A1#1 2x 3 4 N2#1 2 3e 4 C A4#2 5d 6o 6+ 7c 8 R7#2 @2000 7 8 F8#2 s9 s10a A10#3 " +
	"1/Q0:3 1/r0 1/r1x 1/r2 1/Q1:2 1/r1 1/r2e 1/Cr 1/A2#1"

// TestKindsTrace keeps testdata/kinds-mirror.pcap and kinds-foreign.pcap,
// the traces cmd/lumina's browser test checks the page's decode lines
// against lumina decode with, equal to what kindsScript builds (-update
// rewrites them).
func TestKindsTrace(t *testing.T) {
	conns := tracetest.Conns(2, 1<<24-3, model.VerbWrite)
	conns[1].Verb = model.VerbRead
	for _, c := range []struct {
		name string
		opt  tracetest.Options
	}{{"kinds-mirror.pcap", tracetest.Options{Step: 250}}, {"kinds-foreign.pcap", tracetest.Options{Foreign: true, Step: 250}}} {
		fr, err := tracetest.Frames(conns, kindsScript, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		fr = append(fr, extraKinds(t, fr[len(fr)-1].TimeNs)...)
		b, err := tracetest.Pcap(fr, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(old, b) {
			t.Errorf("%s is stale (%v): go test ./analyzers/report -run TestKindsTrace -update", path, err)
		}
	}
}

// extraKinds are what the script cannot write: an IPv6 connection whose
// WRITE ONLY has a RETH, a 1021-byte payload (3 pad bytes) and a large
// VA, answered by an ACK with a credit count.
func extraKinds(t *testing.T, after int64) []tracetest.Frame {
	req, rsp := netip.MustParseAddr("fd00::11"), netip.MustParseAddr("fd00::1")
	specs := []roce.FrameSpec{
		{SrcIP: req, DstIP: rsp, DestQP: 0x300, UDPSrc: 0xC002, Opcode: roce.RCWriteOnly, PSN: 77, AckReq: true,
			RETH: roce.RETHFields{VA: 0xFEDC_BA98_7654_3210, RKey: 0xABCDEF, Length: 1021}, Payload: make([]byte, 1021)},
		{SrcIP: rsp, DstIP: req, DestQP: 0x301, UDPSrc: 0xC003, Opcode: roce.RCAcknowledge, PSN: 77,
			AETH: roce.AETHFields{Syndrome: roce.ACKSyndrome(5), MSN: 1}},
	}
	var out []tracetest.Frame
	for i, f := range specs {
		b, err := f.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tracetest.Frame{TimeNs: after + int64(i+1)*300, Data: b})
	}
	return out
}
