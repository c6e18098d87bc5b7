package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/netlumina/lumina/trace"
)

// arrival is one frame seen by a receiver.
type arrival struct {
	at   int64
	data string
}

// collect sets a receiver on ep that records arrivals (copying the frame).
func collect(l *EventLoop, ep *Endpoint) *[]arrival {
	var got []arrival
	ep.SetReceiver(func(frame []byte) { got = append(got, arrival{l.Now(), string(frame)}) })
	return &got
}

func frameOf(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n) }

func TestSerializationDelay(t *testing.T) {
	tests := []struct {
		n    int
		bw   int64
		want time.Duration
	}{
		{0, 100e9, 0},
		{1, 100e9, 1}, // 0.08 ns rounds up
		{1000, 100e9, 80},
		{1024, 100e9, 82}, // 81.92
		{64, 10e9, 52},    // 51.2
		{1500, 1e9, 12000},
		{9216, 25e9, 2950},          // 2949.12
		{1000, 0, 80},               // default 100 Gb/s
		{1000, -5, 80},              // default 100 Gb/s
		{1 << 40, 1, math64Quarter}, // saturates
	}
	for _, tt := range tests {
		if got := SerializationDelay(LinkConfig{BandwidthBps: tt.bw}, tt.n); got != tt.want {
			t.Errorf("SerializationDelay(%d bytes, %d bps) = %d, want %d", tt.n, tt.bw, got, tt.want)
		}
	}
}

const math64Quarter = time.Duration(1<<63-1) / 4

func TestLinkArrivalTime(t *testing.T) {
	tests := []struct {
		name   string
		cfg    LinkConfig
		sendAt time.Duration
		size   int
		want   int64
	}{
		{"zero config", LinkConfig{}, 0, 1000, 80 + 500},
		{"rounds up", LinkConfig{BandwidthBps: 100e9, Delay: 500}, 0, 1024, 82 + 500},
		{"10G 1us", LinkConfig{BandwidthBps: 10e9, Delay: time.Microsecond}, 0, 64, 52 + 1000},
		{"no delay", LinkConfig{BandwidthBps: 1e9, Delay: -1}, 0, 1500, 12000},
		{"jumbo 25G", LinkConfig{BandwidthBps: 25e9, Delay: 2 * time.Microsecond}, 0, 9216, 2950 + 2000},
		{"empty frame", LinkConfig{}, 0, 0, 500},
		{"bandwidth 0 is default", LinkConfig{BandwidthBps: 0, Delay: 100}, 0, 125, 10 + 100},
		{"sent later", LinkConfig{BandwidthBps: 8e9, Delay: 7}, 1234, 100, 1234 + 100 + 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewEventLoop()
			n := NewNetwork(l)
			a, b := n.NewLink(tt.cfg)
			got := collect(l, b)
			l.AfterFunc(tt.sendAt, func() { a.Send(frameOf(tt.size, 'x')) })
			l.Run()
			want := []arrival{{tt.want, string(frameOf(tt.size, 'x'))}}
			if !slices.Equal(*got, want) {
				t.Errorf("arrivals = %v, want at %d", times(*got), tt.want)
			}
			if got, want := b.Stats(), (LinkStats{RxFrames: 1, RxBytes: uint64(tt.size)}); got != want {
				t.Errorf("b.Stats() = %+v, want %+v", got, want)
			}
			if got, want := a.Stats(), (LinkStats{TxFrames: 1, TxBytes: uint64(tt.size)}); got != want {
				t.Errorf("a.Stats() = %+v, want %+v", got, want)
			}
		})
	}
}

func times(as []arrival) []int64 {
	var ts []int64
	for _, a := range as {
		ts = append(ts, a.at)
	}
	return ts
}

func TestLinkQueueing(t *testing.T) {
	// 10 Gb/s: a 1000-byte frame takes 800 ns; delay 500 ns.
	cfg := LinkConfig{BandwidthBps: 10e9, Delay: 500}
	type send struct {
		at   int64
		size int
	}
	tests := []struct {
		name  string
		sends []send
		want  []int64
	}{
		{"one", []send{{0, 1000}}, []int64{1300}},
		{"back to back", []send{{0, 1000}, {0, 1000}, {0, 1000}}, []int64{1300, 2100, 2900}},
		{"mid transmission waits", []send{{0, 1000}, {400, 1000}}, []int64{1300, 2100}},
		{"after wire idle", []send{{0, 1000}, {800, 1000}}, []int64{1300, 2100}},
		{"gap", []send{{0, 1000}, {1000, 1000}}, []int64{1300, 2300}},
		{"mixed sizes", []send{{0, 100}, {0, 1000}, {50, 10}}, []int64{80 + 500, 880 + 500, 888 + 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewEventLoop()
			n := NewNetwork(l)
			a, b := n.NewLink(cfg)
			got := collect(l, b)
			for i, s := range tt.sends {
				l.AfterFunc(time.Duration(s.at), func() { a.Send(frameOf(s.size, byte('0'+i))) })
			}
			l.Run()
			if g := times(*got); !slices.Equal(g, tt.want) {
				t.Errorf("arrival times = %v, want %v", g, tt.want)
			}
			for i, arr := range *got {
				if want := string(frameOf(tt.sends[i].size, byte('0'+i))); arr.data != want {
					t.Errorf("frame %d arrived out of order or corrupted", i)
				}
			}
		})
	}
}

func TestLinkFullDuplex(t *testing.T) {
	l := NewEventLoop()
	n := NewNetwork(l)
	a, b := n.NewLink(LinkConfig{BandwidthBps: 10e9, Delay: 500})
	gotA, gotB := collect(l, a), collect(l, b)
	a.Send(frameOf(1000, 'a'))
	a.Send(frameOf(1000, 'a'))
	b.Send(frameOf(1000, 'b'))
	l.Run()
	if got, want := times(*gotB), []int64{1300, 2100}; !slices.Equal(got, want) {
		t.Errorf("a->b arrivals = %v, want %v", got, want)
	}
	if got, want := times(*gotA), []int64{1300}; !slices.Equal(got, want) {
		t.Errorf("b->a arrivals = %v, want %v (directions must not share the wire)", got, want)
	}
}

func TestLinkHookDrop(t *testing.T) {
	l := NewEventLoop()
	n := NewNetwork(l)
	var seen []string
	cfg := LinkConfig{BandwidthBps: 10e9, Delay: 500, Hook: func(dir Direction, frame []byte) Verdict {
		seen = append(seen, fmt.Sprintf("%v@%d:%c", dir, l.Now(), frame[0]))
		if frame[0] == '2' {
			return Drop
		}
		return Pass
	}}
	a, b := n.NewLink(cfg)
	got := collect(l, b)
	for i := 1; i <= 3; i++ {
		a.Send(frameOf(1000, byte('0'+i)))
	}
	l.Run()
	// Frame 2 is dropped when it would start (800); it takes no wire time,
	// so frame 3 starts at 800 too.
	if want := []string{"a->b@0:1", "a->b@800:2", "a->b@800:3"}; !slices.Equal(seen, want) {
		t.Errorf("hook calls = %q, want %q", seen, want)
	}
	if got, want := times(*got), []int64{1300, 2100}; !slices.Equal(got, want) {
		t.Errorf("arrival times = %v, want %v", got, want)
	}
	if got, want := a.Stats(), (LinkStats{TxFrames: 2, TxBytes: 2000, DroppedHook: 1}); got != want {
		t.Errorf("a.Stats() = %+v, want %+v", got, want)
	}
}

func TestLinkHookMutate(t *testing.T) {
	l := NewEventLoop()
	n := NewNetwork(l)
	a, b := n.NewLink(LinkConfig{Hook: func(dir Direction, frame []byte) Verdict {
		if dir == BtoA {
			frame[0] = 'B'
		} else {
			frame[0] = 'A'
		}
		return Pass
	}})
	gotA, gotB := collect(l, a), collect(l, b)
	sent := []byte("hello")
	a.Send(sent)
	b.Send(sent)
	sent[1] = 'E' // the link copied the frame at Send: this must not show
	l.Run()
	if string(sent) != "hEllo" {
		t.Errorf("sender's buffer = %q, want %q (hook must mutate the link's copy)", sent, "hEllo")
	}
	if got, want := (*gotB)[0].data, "Aello"; got != want {
		t.Errorf("b received %q, want %q", got, want)
	}
	if got, want := (*gotA)[0].data, "Bello"; got != want {
		t.Errorf("a received %q, want %q", got, want)
	}
}

func TestLinkQueueOverflow(t *testing.T) {
	l := NewEventLoop()
	n := NewNetwork(l)
	// 1000-byte frames take 800 ns; the queue holds 3 of them, counting the
	// one on the wire.
	a, b := n.NewLink(LinkConfig{BandwidthBps: 10e9, Delay: 500, QueueBytes: 3000})
	got := collect(l, b)
	for range 5 {
		a.Send(frameOf(1000, 'x'))
	}
	if got, want := a.Stats().DroppedQueue, uint64(2); got != want {
		t.Errorf("DroppedQueue after 5 sends = %d, want %d", got, want)
	}
	// At 800 the first frame has left the queue: one more fits, two do not.
	l.AfterFunc(800, func() {
		a.Send(frameOf(1000, 'y'))
		a.Send(frameOf(1000, 'z'))
	})
	l.Run()
	if got, want := a.Stats(), (LinkStats{TxFrames: 4, TxBytes: 4000, DroppedQueue: 3}); got != want {
		t.Errorf("a.Stats() = %+v, want %+v", got, want)
	}
	if got, want := times(*got), []int64{1300, 2100, 2900, 3700}; !slices.Equal(got, want) {
		t.Errorf("arrival times = %v, want %v", got, want)
	}
	if got, want := (*got)[3].data[0], byte('y'); got != want {
		t.Errorf("4th frame = %c, want %c", got, want)
	}
}

func TestLinkUnboundedQueue(t *testing.T) {
	l := NewEventLoop()
	n := NewNetwork(l)
	a, b := n.NewLink(LinkConfig{QueueBytes: -1})
	b.SetReceiver(func([]byte) {})
	for range 3000 { // 27 MiB > the 16 MiB default
		a.Send(frameOf(9216, 'x'))
	}
	l.Run()
	if got, want := b.Stats().RxFrames, uint64(3000); got != want || a.Stats().DroppedQueue != 0 {
		t.Errorf("RxFrames = %d, DroppedQueue = %d; want %d, 0", got, a.Stats().DroppedQueue, want)
	}
}

func TestLinkMTU(t *testing.T) {
	tests := []struct {
		mtu, size int
		drop      bool
	}{
		{0, 9216, false},
		{0, 9217, true},
		{1500, 1500, false},
		{1500, 1501, true},
		{-1, 100000, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("mtu=%d/size=%d", tt.mtu, tt.size), func(t *testing.T) {
			l := NewEventLoop()
			n := NewNetwork(l)
			a, b := n.NewLink(LinkConfig{MTU: tt.mtu})
			got := collect(l, b)
			a.Send(frameOf(tt.size, 'm'))
			l.Run()
			wantRx, wantDrop := 1, uint64(0)
			if tt.drop {
				wantRx, wantDrop = 0, 1
			}
			if len(*got) != wantRx || a.Stats().DroppedMTU != wantDrop {
				t.Errorf("received %d, DroppedMTU = %d; want %d, %d", len(*got), a.Stats().DroppedMTU, wantRx, wantDrop)
			}
		})
	}
}

func TestLinkNoReceiver(t *testing.T) {
	l := NewEventLoop()
	n := NewNetwork(l)
	a, b := n.NewLink(LinkConfig{})
	a.Send([]byte("lost"))
	l.Run()
	if got, want := b.Stats(), (LinkStats{RxDropped: 1}); got != want {
		t.Errorf("b.Stats() = %+v, want %+v", got, want)
	}
	b.SetReceiver(func([]byte) { t.Error("replaced receiver called") })
	a.Send([]byte("found")) // at 501, arrives 501 + 1 + 500
	got := collect(l, b)    // receivers are looked up on arrival
	l.Run()
	if want := []arrival{{1002, "found"}}; !slices.Equal(*got, want) {
		t.Errorf("arrivals = %v, want %v", *got, want)
	}
}

func TestEndpointNames(t *testing.T) {
	n := NewNetwork(NewEventLoop())
	a0, b0 := n.NewLink(LinkConfig{})
	a1, b1 := n.NewLink(LinkConfig{Name: "nic0-sw"})
	for _, tt := range []struct {
		ep   *Endpoint
		name string
		dir  Direction
		peer *Endpoint
	}{
		{a0, "link0/a", AtoB, b0}, {b0, "link0/b", BtoA, a0},
		{a1, "nic0-sw/a", AtoB, b1}, {b1, "nic0-sw/b", BtoA, a1},
	} {
		if tt.ep.Name() != tt.name || tt.ep.Direction() != tt.dir || tt.ep.Peer() != tt.peer {
			t.Errorf("endpoint %s: Direction() = %v, want %s %v", tt.ep.Name(), tt.ep.Direction(), tt.name, tt.dir)
		}
	}
	for _, tt := range []struct {
		s    fmt.Stringer
		want string
	}{
		{AtoB, "a->b"}, {BtoA, "b->a"}, {Direction(0), "Direction(0)"},
		{Pass, "pass"}, {Drop, "drop"}, {Verdict(7), "Verdict(7)"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestTap(t *testing.T) {
	l := NewEventLoop()
	n := NewNetwork(l)
	a, b := n.NewLink(LinkConfig{BandwidthBps: 10e9, Delay: 500, Hook: func(dir Direction, f []byte) Verdict {
		if f[0] == 'd' {
			return Drop
		}
		if f[0] == 'm' {
			f[1] = '!'
		}
		return Pass
	}})
	other, _ := n.NewLink(LinkConfig{})
	var buf, small bytes.Buffer
	if err := n.Tap(a, &buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := n.Tap(b, &small, 4); err != nil { // same link, via the other end
		t.Fatal(err)
	}
	a.Send(frameOf(1000, 'a')) // on the wire 0..800
	a.Send([]byte("dropped"))  // hook drop: not recorded
	b.Send([]byte("mutate"))   // recorded as mutated, at 0
	l.AfterFunc(100, func() {
		a.Send([]byte("second")) // waits for the wire: starts at 800
		other.Send([]byte("other link"))
	})
	l.Run()
	if buf.Len() != 0 {
		t.Errorf("tap wrote %d bytes before Close, want 0 (buffered)", buf.Len())
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second Close() = %v", err)
	}
	if err := n.Tap(a, io.Discard, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Tap after Close = %v, want ErrClosed", err)
	}
	a.Send([]byte("after close")) // not recorded
	l.Run()

	type rec struct {
		ts   int64
		data string
		orig int
	}
	read := func(b []byte) []rec {
		t.Helper()
		r, err := trace.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if r.LinkType() != trace.LinkTypeEthernet {
			t.Errorf("LinkType() = %v, want ETHERNET", r.LinkType())
		}
		var recs []rec
		for {
			p, err := r.Next()
			if err == io.EOF {
				return recs
			}
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec{p.TimeNs, string(p.Data), p.OrigLen})
		}
	}
	want := []rec{{0, string(frameOf(1000, 'a')), 1000}, {0, "m!tate", 6}, {800, "second", 6}}
	if got := read(buf.Bytes()); !slices.Equal(got, want) {
		t.Errorf("tap records = %v, want %v", got, want)
	}
	wantSmall := []rec{{0, "aaaa", 1000}, {0, "m!ta", 6}, {800, "seco", 6}}
	if got := read(small.Bytes()); !slices.Equal(got, wantSmall) {
		t.Errorf("snaplen-4 tap records = %v, want %v", got, wantSmall)
	}
}

func TestTapErrors(t *testing.T) {
	n := NewNetwork(NewEventLoop())
	a, _ := n.NewLink(LinkConfig{})
	other, _ := NewNetwork(NewEventLoop()).NewLink(LinkConfig{})
	if err := n.Tap(other, io.Discard, 0); err == nil {
		t.Error("Tap(endpoint of another network) = nil, want error")
	}
	if err := n.Tap(a, io.Discard, -1); !errors.Is(err, trace.ErrInvalid) {
		t.Errorf("Tap(snaplen -1) = %v, want trace.ErrInvalid", err)
	}
	werr := errors.New("disk full")
	if err := n.Tap(a, failWriter{werr}, 0); err != nil {
		t.Fatal(err) // the header is buffered: no error yet
	}
	a.Send([]byte("x"))
	n.Loop().Run()
	if err := n.Close(); !errors.Is(err, werr) {
		t.Errorf("Close() = %v, want %v", err, werr)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestPingPong bounces one frame between two endpoints 1e5 times; the run
// must end at exactly the predicted virtual time with nothing left queued.
func TestPingPong(t *testing.T) {
	const rounds = 100_000
	l := NewEventLoop()
	n := NewNetwork(l)
	a, b := n.NewLink(LinkConfig{BandwidthBps: 25e9, Delay: time.Microsecond})
	count := 0
	b.SetReceiver(func(f []byte) { b.Send(f) })
	a.SetReceiver(func(f []byte) {
		count++
		if count < rounds {
			a.Send(f)
		}
	})
	a.Send(frameOf(128, 'p'))
	steps := 0
	for l.Step() {
		steps++
		if steps > 4*rounds {
			t.Fatalf("ping-pong did not finish in %d steps", steps)
		}
	}
	oneWay := int64(SerializationDelay(LinkConfig{BandwidthBps: 25e9}, 128)) + 1000 // 41 + 1000
	if got, want := l.Now(), rounds*2*oneWay; got != want {
		t.Errorf("Now() = %d, want %d", got, want)
	}
	if count != rounds || steps != 2*rounds || l.Pending() != 0 {
		t.Errorf("count = %d, steps = %d, Pending() = %d; want %d, %d, 0", count, steps, l.Pending(), rounds, 2*rounds)
	}
}

// TestDeterminism runs a seeded random workload with many ties on a small
// topology twice; the event traces must be identical.
func TestDeterminism(t *testing.T) {
	run := func(seed uint64) []string {
		rng := newTestRand(seed)
		l := NewEventLoop()
		n := NewNetwork(l)
		var log []string
		var eps []*Endpoint
		for i := range 3 {
			a, b := n.NewLink(LinkConfig{
				BandwidthBps: int64(10e9 * (i + 1)),
				Delay:        time.Duration(100 * (i + 1)),
				QueueBytes:   4000,
				Hook: func(dir Direction, f []byte) Verdict {
					if f[0]%7 == 0 {
						return Drop
					}
					return Pass
				},
			})
			eps = append(eps, a, b)
		}
		for _, ep := range eps {
			ep.SetReceiver(func(f []byte) {
				log = append(log, fmt.Sprintf("%d %s %d %x", l.Now(), ep.Name(), len(f), f[0]))
				if f[0]%3 == 0 && len(f) > 8 { // forward to a random endpoint: more ties
					eps[int(f[1])%len(eps)].Send(f[:len(f)/2+2])
				}
			})
		}
		for range 2000 {
			at := time.Duration(rng.IntN(50)) * 100 // coarse times: many ties
			ep := eps[rng.IntN(len(eps))]
			f := frameOf(64+rng.IntN(1400), byte(rng.IntN(256)))
			f[1] = byte(rng.IntN(256))
			l.AfterFunc(at, func() {
				log = append(log, fmt.Sprintf("%d send %s", l.Now(), ep.Name()))
				ep.Send(f)
			})
		}
		l.Run()
		for _, ep := range eps {
			log = append(log, fmt.Sprintf("%s %+v", ep.Name(), ep.Stats()))
		}
		return log
	}
	first, second := run(42), run(42)
	if !slices.Equal(first, second) {
		for i := range min(len(first), len(second)) {
			if first[i] != second[i] {
				t.Fatalf("runs diverge at line %d: %q vs %q", i, first[i], second[i])
			}
		}
		t.Fatalf("runs differ in length: %d vs %d", len(first), len(second))
	}
	if len(first) < 2000 {
		t.Errorf("trace has %d lines, want at least 2000", len(first))
	}
	if other := run(43); slices.Equal(first, other) {
		t.Error("different seeds gave identical traces; the workload is not exercising anything")
	}
}
