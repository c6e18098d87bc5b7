package dumper

import (
	"context"
	"sync"

	"github.com/netlumina/lumina/sim"
)

// simBackend receives frames from a sim.Port and writes each to the next
// worker's spool, round robin, on the sim Loop that delivers it (the
// virtual clock does not advance while it writes, so nothing is ever lost
// for speed). mu makes Stop, called from another goroutine, wait for the
// callback in progress.
//
// A frame the switch→dumper link drops (its queue full: a burst of copies
// faster than the link, or longer than its MTU) never reaches the backend;
// stop reports those drops as the kernel drops of the other backends, so
// that the integrity check names them.
type simBackend struct {
	cfg     *Config
	mu      sync.Mutex // guards next, stopped and the spools while running
	ws      []*worker
	next    int
	stopped bool
	sender  *sim.Endpoint // the link's switch end, if SimPort is an Endpoint
	dropped uint64        // sender's drops when the capture started
}

func newSimBackend(cfg *Config) *simBackend { return &simBackend{cfg: cfg} }

func (s *simBackend) start(_ context.Context, ws []*worker) error {
	s.ws = ws
	if ep, ok := s.cfg.SimPort.(*sim.Endpoint); ok {
		s.sender = ep.Peer()
		s.dropped = linkDrops(s.sender)
	}
	s.cfg.SimPort.SetReceiver(s.receive)
	return nil
}

// linkDrops counts the frames e sent that its link dropped.
func linkDrops(e *sim.Endpoint) uint64 {
	st := e.Stats()
	return st.DroppedQueue + st.DroppedMTU + st.DroppedHook
}

func (s *simBackend) receive(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	w := s.ws[s.next]
	s.next = (s.next + 1) % len(s.ws)
	var c batch
	if isMirrorCopy(frame, s.cfg.MirrorPort) {
		w.sp.put(&c, frame, len(frame))
	} else {
		c.foreign++
	}
	w.c.flush(&c)
}

func (s *simBackend) stop() (uint64, []uint64, error) {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	if s.sender == nil {
		return 0, nil, nil
	}
	return linkDrops(s.sender) - s.dropped, nil, nil
}

func (s *simBackend) close() error { return nil }
