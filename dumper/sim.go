package dumper

import (
	"context"
	"sync"
)

// simBackend receives frames from a sim.Port. The port's receive callback
// runs on the sim Loop; mu makes Stop, called from another goroutine, wait
// for the callback in progress.
type simBackend struct {
	cfg     *Config
	mu      sync.Mutex // guards next, stopped and the buffers while running
	bufs    []*buffer
	next    int
	stopped bool
}

func newSimBackend(cfg *Config) *simBackend { return &simBackend{cfg: cfg} }

func (s *simBackend) start(_ context.Context, bufs []*buffer) error {
	s.bufs = bufs
	s.cfg.SimPort.SetReceiver(s.receive)
	return nil
}

func (s *simBackend) receive(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	b := s.bufs[s.next]
	s.next = (s.next + 1) % len(s.bufs)
	var c batch
	if isMirrorCopy(frame, s.cfg.MirrorPort) {
		b.put(&c, frame, len(frame), 0)
	} else {
		c.foreign++
	}
	b.flush(&c)
}

func (s *simBackend) stop() (uint64, []uint64, error) {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return 0, nil, nil
}

func (s *simBackend) close() error { return nil }
