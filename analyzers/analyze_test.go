package analyzers_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/trace"
)

// TestForeignCapture: a capture without mirror metadata (taken at the
// receiver: the dropped packet is absent) is analyzed with inferred
// connections, pcap timestamps and integrity skip.
func TestForeignCapture(t *testing.T) {
	conns := tracetest.Conns(2, 0xFFFFFE, model.VerbWrite)
	b := tracetest.Build(t, conns, "0/0 1/0 0/1x 1/1 0/2 0/N1 1/A1 0/1 0/2 0/A2", tracetest.Options{Foreign: true})
	r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("foreign", b), model.Meta{}, analyzers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Trace.Mirrored || r.Integrity.Verdict != model.Skip || !r.Valid || !r.Passed() {
		t.Fatalf("mirrored %v integrity %v valid %v passed %v\n%s", r.Trace.Mirrored, r.Integrity.Verdict, r.Valid, r.Passed(), report.Text(r))
	}
	if len(r.Connections) != 2 || !r.Connections[0].Inferred || r.Connections[0].Requester.IPSN != 0xFFFFFE {
		t.Errorf("connections %+v", r.Connections)
	}
	ls := r.Checks.Retransmission.Losses
	if len(ls) != 1 || ls[0].Event != "gap" || ls[0].Kind != "fast" || ls[0].RelPSN != 1 {
		t.Errorf("losses %+v, want one fast gap at rel 1", ls)
	}
}

// TestInvalidTrace: a mirror trace with a missing sequence number fails
// the integrity check; no analyzer verdict counts.
func TestInvalidTrace(t *testing.T) {
	conns := tracetest.Conns(1, 5, model.VerbWrite)
	// Remove the third record of a mirror trace: a hole in the sequence
	// numbers, as when a dumper lost a packet.
	rd, err := trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, "0 1 2 3 A3", tracetest.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := trace.NewPcapWriter(&buf, 128, trace.LinkTypeEthernet)
	for i := 0; ; i++ {
		p, err := rd.Next()
		if err != nil {
			break
		}
		if i != 2 {
			w.WritePacket(p.TimeNs, p.Data, p.OrigLen)
		}
	}
	r, err := analyzers.Analyze(context.Background(), analyzers.Bytes("holes", buf.Bytes()), model.Meta{Connections: conns}, analyzers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Valid || r.Integrity.Verdict != model.Fail || r.Passed() {
		t.Fatalf("valid %v integrity %+v passed %v", r.Valid, r.Integrity, r.Passed())
	}
	for name, v := range r.Checks.Verdicts() {
		if v != model.Skip {
			t.Errorf("check %s = %v on an invalid trace, want skip", name, v)
		}
	}
}

func TestBadOptions(t *testing.T) {
	_, err := analyzers.Analyze(context.Background(), analyzers.Bytes("x", nil), model.Meta{}, analyzers.Options{Checks: []string{"gbn", "bogus"}})
	if !errors.Is(err, analyzers.ErrChecks) {
		t.Errorf("Analyze with check bogus: %v, want ErrChecks", err)
	}
	if _, err := analyzers.Analyze(context.Background(), analyzers.Bytes("x", []byte("junk")), model.Meta{}, analyzers.Options{}); err == nil {
		t.Error("Analyze of junk: no error")
	}
}
