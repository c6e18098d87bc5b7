package sim

import (
	"bytes"
	"io"
	"strconv"
	"testing"
	"time"
)

func noop() {}

func TestAllocsEventLoopPost(t *testing.T) {
	l := NewEventLoop()
	got := testing.AllocsPerRun(1000, func() {
		l.Post(noop)
		l.Run()
	})
	if got != 0 {
		t.Errorf("Post+Run allocs = %v, want 0", got)
	}
}

// TestAllocsEventLoopAfterFunc checks that AfterFunc costs one slab
// allocation per slabSize calls: its event is the Timer and is not reused.
func TestAllocsEventLoopAfterFunc(t *testing.T) {
	l := NewEventLoop()
	got := testing.AllocsPerRun(100, func() {
		for i := range slabSize {
			l.AfterFunc(time.Duration(i), noop)
		}
		l.Run()
	})
	if got != 1 {
		t.Errorf("allocs per %d AfterFunc+Run = %v, want 1", slabSize, got)
	}
}

// TestAllocsLinkSteadyState: once the pools are warm, Send, transmission,
// delivery (and a tap) allocate nothing per frame, queued or not.
func TestAllocsLinkSteadyState(t *testing.T) {
	for _, burst := range []int{1, 16} {
		l := NewEventLoop()
		n := NewNetwork(l)
		a, b := n.NewLink(LinkConfig{Hook: func(Direction, []byte) Verdict { return Pass }})
		if err := n.Tap(a, io.Discard, 128); err != nil {
			t.Fatal(err)
		}
		b.SetReceiver(func([]byte) {})
		frame := bytes.Repeat([]byte{0xab}, 1024)
		got := testing.AllocsPerRun(1000, func() {
			for range burst {
				a.Send(frame)
			}
			l.Run()
		})
		if got != 0 {
			t.Errorf("burst of %d: allocs per Send+deliver = %v, want 0", burst, got)
		}
	}
}

func BenchmarkEventLoop(b *testing.B) {
	// Events per second through a heap holding `pending` events.
	for _, pending := range []int{1, 1000} {
		b.Run("Post/pending="+itoa(pending), func(b *testing.B) {
			l := NewEventLoop()
			for i := range pending - 1 {
				l.AfterFunc(time.Duration(1<<40+i), noop)
			}
			var f func()
			left := b.N
			f = func() {
				if left--; left > 0 {
					l.Post(f)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			l.Post(f)
			l.RunUntil(1 << 39)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run("AfterFunc/pending="+itoa(pending), func(b *testing.B) {
			l := NewEventLoop()
			for i := range pending - 1 {
				l.AfterFunc(time.Duration(1<<40+i), noop)
			}
			var f func()
			left := b.N
			f = func() {
				if left--; left > 0 {
					l.AfterFunc(time.Duration(left%7), f)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			l.Post(f)
			l.RunUntil(1 << 39)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func BenchmarkLink(b *testing.B) {
	// Frames per second through one link, 1024-byte frames, sent in bursts
	// of 64 so that they queue behind each other.
	const burst = 64
	l := NewEventLoop()
	n := NewNetwork(l)
	a, r := n.NewLink(LinkConfig{})
	r.SetReceiver(func([]byte) {})
	frame := bytes.Repeat([]byte{0xab}, 1024)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += burst {
		for range min(burst, b.N-i) {
			a.Send(frame)
		}
		l.Run()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

func BenchmarkPingPong(b *testing.B) {
	l := NewEventLoop()
	n := NewNetwork(l)
	a, r := n.NewLink(LinkConfig{})
	left := b.N
	r.SetReceiver(func(f []byte) { r.Send(f) })
	a.SetReceiver(func(f []byte) {
		if left--; left > 0 {
			a.Send(f)
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	a.Send(make([]byte, 1024))
	l.Run()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}

func itoa(i int) string { return strconv.Itoa(i) }
