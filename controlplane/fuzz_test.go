package controlplane

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/roce"
)

// FuzzTranslate builds connections, ports and events from fuzzed integers
// and bytes and checks that Translate never panics, that its errors are
// the package's, and that an accepted plan is consistent: one connection
// entry per connection, every event's PSN within 24 bits and equal to its
// connection's IPSN plus the relative PSN, keyed on that connection's port
// and QPN, and a WRR list matching the weights.
func FuzzTranslate(f *testing.F) {
	// nconn, verbs (2 bits each), qpn/ipsn base, events (5 bytes each),
	// weights, flags.
	f.Add(uint8(1), uint8(0), uint32(0x10), uint32(0), []byte{0, 0, 0, 1, 0}, []byte{1, 2}, uint8(0))
	f.Add(uint8(2), uint8(0b0100), uint32(0xabc), uint32(0xfffff0), []byte{0, 0, 20, 1, 1, 1, 0, 20, 2, 0}, []byte{1}, uint8(1))
	f.Add(uint8(3), uint8(0b011000), uint32(0xffffff), uint32(0xffffff), []byte{2, 0xff, 0xff, 3, 2}, []byte{255, 1}, uint8(2))
	f.Add(uint8(0), uint8(0), uint32(0), uint32(0), []byte{}, []byte{}, uint8(0))
	f.Add(uint8(1), uint8(3), uint32(1<<24), uint32(1<<24), []byte{9, 0, 0, 0, 0}, []byte{0}, uint8(0xff))
	f.Fuzz(func(t *testing.T, nconn, verbs uint8, qpn, ipsn uint32, evs, weights []byte, flags uint8) {
		verbNames := []generator.Verb{generator.VerbWrite, generator.VerbRead, generator.VerbSend, "bogus"}
		var conns []generator.Connection
		for i := range int(nconn % 9) {
			idx := i
			if flags&1 != 0 && i == 1 {
				idx = 5 // a wrong index
			}
			reqIP := testPorts.Hosts[0].IPs[i%2]
			if flags&2 != 0 && i == 2 {
				reqIP = netip.MustParseAddr("10.0.0.99") // not the requester's
			}
			mac := roce.MAC{2, 0, 0, 0, 0, 2}
			if flags&4 != 0 {
				mac = roce.MAC{} // none
			}
			step := uint32(i)
			if flags&8 != 0 {
				step = 0 // duplicate QPNs
			}
			conns = append(conns, generator.Connection{Index: idx, Verb: verbNames[(verbs>>(2*(i%4)))&3],
				Requester: generator.Endpoint{IP: reqIP, MAC: roce.MAC{2, 0, 0, 0, 0, 1}, QPN: qpn + step, IPSN: ipsn + 7*uint32(i)},
				Responder: generator.Endpoint{IP: netip.MustParseAddr("10.0.0.2"), MAC: mac, QPN: qpn ^ step + 1, IPSN: ipsn ^ uint32(i)}})
		}
		ports := testPorts
		ports.Dumpers = nil
		for i, w := range weights {
			if i >= 17 {
				break
			}
			ports.Dumpers = append(ports.Dumpers, Dumper{Name: fmt.Sprint("d", i), Port: uint32(10 + i), MAC: [6]byte{2, 0, 0, 0, 1, byte(i)}, Weight: int(w)})
		}
		in := Intent{IterScope: config.IterScopeConnection, MirrorPort: uint16(flags) << 4}
		if flags&16 != 0 {
			in.IterScope = config.IterScopeMessage
		}
		types := []config.EventType{config.EventDrop, config.EventECN, config.EventCorrupt}
		for len(evs) >= 5 {
			rel := int(evs[1])<<8 | int(evs[2])
			if flags&32 != 0 {
				rel = rel<<12 | int(evs[2]) // up to and past 2^24
			}
			in.Events = append(in.Events, config.ExpandedEvent{QP: int(int8(evs[0])), Msg: int(evs[1]), PSN: int(evs[2]),
				RelPSN: rel, Iter: int(evs[3]), Type: types[int(evs[4])%len(types)]})
			evs = evs[5:]
		}
		p, err := Translate(in, conns, ports)
		if err != nil {
			if p != nil {
				t.Fatalf("Translate returned a Plan and an error")
			}
			if !errors.Is(err, ErrMetadata) && !errors.Is(err, ErrIntent) && !strings.HasPrefix(err.Error(), "controlplane: ") {
				t.Fatalf("Translate error %q is not the package's", err)
			}
			return
		}
		if len(p.Conns) != len(conns) {
			t.Fatalf("%d connection entries for %d connections", len(p.Conns), len(conns))
		}
		for _, e := range p.Events {
			if uint32(e.PSN) > roce.PSNMask {
				t.Fatalf("event PSN %#x exceeds 24 bits", uint32(e.PSN))
			}
			if e.QP < 0 || e.QP >= len(conns) {
				t.Fatalf("event references QP %d of %d connections", e.QP, len(conns))
			}
			ce := p.Conns[e.QP]
			if e.Port != ce.Port || e.DestQP != ce.DestQP || e.PSN != ce.IPSN.Add(e.RelPSN) || e.Iter < 1 {
				t.Fatalf("event %+v does not match its connection %+v", e, ce)
			}
			if ce.DestQP == 0 || ce.DestQP > roce.PSNMask || uint32(ce.IPSN) > roce.PSNMask {
				t.Fatalf("connection entry %+v out of 24 bits", ce)
			}
		}
		total := 0
		for _, d := range ports.Dumpers {
			total += d.Weight
		}
		if len(p.WRR) != total || len(p.Sessions) != len(ports.Dumpers) {
			t.Fatalf("%d WRR slots and %d sessions for weights summing to %d over %d dumpers", len(p.WRR), len(p.Sessions), total, len(ports.Dumpers))
		}
		for _, s := range p.WRR {
			if s < 1 || int(s) > len(p.Sessions) {
				t.Fatalf("WRR slot names session %d of %d", s, len(p.Sessions))
			}
		}
	})
}
