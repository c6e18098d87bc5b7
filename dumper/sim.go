package dumper

import (
	"context"
	"sync"
)

// simBackend receives frames from a sim.Port and writes each to the next
// worker's spool, round robin, on the sim Loop that delivers it (the
// virtual clock does not advance while it writes, so nothing is ever lost
// for speed). mu makes Stop, called from another goroutine, wait for the
// callback in progress.
type simBackend struct {
	cfg     *Config
	mu      sync.Mutex // guards next, stopped and the spools while running
	ws      []*worker
	next    int
	stopped bool
}

func newSimBackend(cfg *Config) *simBackend { return &simBackend{cfg: cfg} }

func (s *simBackend) start(_ context.Context, ws []*worker) error {
	s.ws = ws
	s.cfg.SimPort.SetReceiver(s.receive)
	return nil
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
	return 0, nil, nil
}

func (s *simBackend) close() error { return nil }
