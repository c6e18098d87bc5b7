package verbs

import (
	"fmt"

	"github.com/netlumina/lumina/generator"
)

// pending is a posted work request, found again by the wr_id the device
// gave the NIC (the generator's own IDs repeat: it uses the QP index).
type pending struct {
	userID uint64
	//lint:ignore U1000 read by Device.deliver in verbs_linux.go, built only with -tags verbs (linux, cgo)
	qpn    uint32
	recv   bool
	comp   generator.CompletionOp // sends: the kind of completion
	length int
}

// tracker numbers posted work requests. Not safe for concurrent use: the
// device uses it on its Loop only.
type tracker struct {
	next uint64
	m    map[uint64]pending
}

func (t *tracker) add(p pending) uint64 {
	if t.m == nil {
		t.m = map[uint64]pending{}
	}
	t.next++
	t.m[t.next] = p
	return t.next
}

func (t *tracker) take(id uint64) (pending, bool) {
	p, ok := t.m[id]
	delete(t.m, id)
	return p, ok
}

func (t *tracker) len() int { return len(t.m) }

// checkSendWR validates a send WR's own fields; the MR is checked by the
// device (it must be one of its registrations).
func checkSendWR(wr generator.SendWR) error {
	if _, _, ok := wrOpcode(wr.Op); !ok {
		return fmt.Errorf("%w: opcode %v", generator.ErrBadWR, wr.Op)
	}
	if wr.Local == nil {
		return fmt.Errorf("%w: no local MR", generator.ErrBadWR)
	}
	return checkRange(wr.Local, wr.Offset, wr.Length)
}

func checkRecvWR(wr generator.RecvWR) error {
	if wr.MR == nil {
		return fmt.Errorf("%w: no MR", generator.ErrBadWR)
	}
	return checkRange(wr.MR, wr.Offset, wr.Length)
}

func checkRange(mr *generator.MR, off, n int) error {
	if off < 0 || n < 0 || off > len(mr.Buf) || n > len(mr.Buf)-off || n > 1<<31 {
		return fmt.Errorf("%w: [%d, %d+%d) outside the %d-byte MR", generator.ErrBadWR, off, off, n, len(mr.Buf))
	}
	return nil
}

// backlog holds RECVs that did not fit the receive queue, in order: the
// software RNIC accepts any number of RECVs, and the generator's
// responder posts one per message up front.
type backlog struct{ q []generator.RecvWR }

func (b *backlog) push(wr generator.RecvWR) { b.q = append(b.q, wr) }

func (b *backlog) pop() (generator.RecvWR, bool) {
	if len(b.q) == 0 {
		return generator.RecvWR{}, false
	}
	wr := b.q[0]
	b.q[0] = generator.RecvWR{}
	b.q = b.q[1:]
	return wr, true
}

func (b *backlog) len() int { return len(b.q) }
