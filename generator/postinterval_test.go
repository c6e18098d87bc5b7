package generator_test

import (
	"testing"
	"time"

	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/sim"
)

// watchDevice is a Device whose QPs record their posts (QP index, time on
// the loop) and their connect attributes.
type watchDevice struct {
	generator.Device
	loop    sim.Loop
	posts   *[][]int64 // per QP, in creation order
	connect *[]generator.ConnectAttr
}

func (d watchDevice) NewQP() generator.QP {
	*d.posts = append(*d.posts, nil)
	return watchQP{QP: d.Device.NewQP(), d: d, i: len(*d.posts) - 1}
}

type watchQP struct {
	generator.QP
	d watchDevice
	i int
}

func (q watchQP) PostSend(wr generator.SendWR) error {
	(*q.d.posts)[q.i] = append((*q.d.posts)[q.i], q.d.loop.Now())
	return q.QP.PostSend(wr)
}

func (q watchQP) Connect(a generator.ConnectAttr) error {
	*q.d.connect = append(*q.d.connect, a)
	return q.QP.Connect(a)
}

// watched runs tr on a sim bed and returns each requester QP's post
// times, counted from the first post (the start), the result, and the
// connect attributes of the requester's and the responder's QPs.
func watched(t *testing.T, tr generator.Traffic) (posts [][]int64, res *generator.Result, reqAttr, rspAttr []generator.ConnectAttr) {
	t.Helper()
	b := newSimBed(t, []string{"10.0.0.1"}, []string{"10.0.0.2"})
	b.wrapReq = func(d generator.Device) generator.Device {
		return watchDevice{Device: d, loop: b.loop, posts: &posts, connect: &reqAttr}
	}
	var rspPosts [][]int64
	b.wrapRsp = func(d generator.Device) generator.Device {
		return watchDevice{Device: d, loop: b.loop, posts: &rspPosts, connect: &rspAttr}
	}
	res, _ = b.run(t, tr)
	if len(res.Errors) != 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	start := posts[0][0]
	for _, p := range posts {
		for k := range p {
			p[k] -= start
		}
	}
	return posts, res, reqAttr, rspAttr
}

// TestPostInterval: with PostIntervalNs, message k of a QP is posted at
// the start + k × interval, or when a message of the tx-depth window
// completes if that is later (issue #32).
func TestPostInterval(t *testing.T) {
	const us = int64(time.Microsecond)
	tests := []struct {
		name string
		tr   generator.Traffic
		// want are the exact post times of every QP.
		want [][]int64
	}{
		{"writes 100 µs apart", generator.Traffic{Verb: generator.VerbWrite, MsgsPerQP: 4, MsgSize: new(1024), PostIntervalNs: 100 * us},
			[][]int64{{0, 100 * us, 200 * us, 300 * us}}},
		{"two QPs of reads 50 µs apart", generator.Traffic{Verb: generator.VerbRead, NumQPs: 2, MsgsPerQP: 3, MsgSize: new(1024), PostIntervalNs: 50 * us},
			[][]int64{{0, 50 * us, 100 * us}, {0, 50 * us, 100 * us}}},
		{"tx-depth 2", generator.Traffic{Verb: generator.VerbWrite, MsgsPerQP: 4, MsgSize: new(1024), TxDepth: 2, PostIntervalNs: 30 * us},
			[][]int64{{0, 30 * us, 60 * us, 90 * us}}},
		{"barrier", generator.Traffic{Verb: generator.VerbSend, NumQPs: 2, MsgsPerQP: 3, MsgSize: new(1024), Barrier: true, PostIntervalNs: 70 * us},
			[][]int64{{0, 70 * us, 140 * us}, {0, 70 * us, 140 * us}}},
		// Shorter than a message takes (a 64 KiB WRITE completes after
		// 6637 ns): each waits for the completion that opens the tx-depth
		// window (or the barrier), as the check below derives.
		{"interval shorter than a message", generator.Traffic{Verb: generator.VerbWrite, MsgsPerQP: 4, MsgSize: new(65536), PostIntervalNs: 1},
			[][]int64{{0, 6637, 13274, 19911}}},
		{"tx-depth 2, interval shorter", generator.Traffic{Verb: generator.VerbRead, MsgsPerQP: 5, MsgSize: new(65536), TxDepth: 2, PostIntervalNs: 2 * us},
			[][]int64{{0, 2000, 6637, 12269, 17901}}},
		{"barrier, interval shorter", generator.Traffic{Verb: generator.VerbWrite, NumQPs: 2, MsgsPerQP: 3, MsgSize: new(32768), Barrier: true, PostIntervalNs: 3 * us},
			[][]int64{{0, 6638, 13276}, {0, 6638, 13276}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			posts, res, _, _ := watched(t, tt.tr)
			for i := range tt.want {
				if !equal(posts[i], tt.want[i]) {
					t.Errorf("QP %d post times = %v, want %v", i, posts[i], tt.want[i])
				}
			}
			// Every schedule: post k = max(k × interval, completion of
			// message k − tx-depth of the QP), or with the barrier of
			// round k − 1 on every QP.
			depth := max(tt.tr.TxDepth, 1)
			done := func(i, k int) int64 { return posts[i][k] + res.QPs[i].MCTNs[k] }
			for i, p := range posts {
				if len(p) != tt.tr.MsgsPerQP {
					t.Fatalf("QP %d: %d posts, want %d", i, len(p), tt.tr.MsgsPerQP)
				}
				for k := range p {
					want := int64(k) * tt.tr.PostIntervalNs
					switch {
					case tt.tr.Barrier && k > 0:
						for j := range posts {
							want = max(want, done(j, k-1))
						}
					case !tt.tr.Barrier && k >= depth:
						want = max(want, done(i, k-depth))
					}
					if p[k] != want {
						t.Errorf("QP %d message %d posted at %d ns, want %d (posts %v, MCTs %v)", i, k, p[k], want, p, res.QPs[i].MCTNs)
					}
				}
			}
		})
	}
}

// TestPostIntervalNeedsAfter: a post interval without After is refused.
func TestPostIntervalNeedsAfter(t *testing.T) {
	loop := sim.NewEventLoop()
	b := newSimBed(t, []string{"10.0.0.1"}, []string{"10.0.0.2"})
	_, err := generator.NewRequester(generator.RequesterConfig{Device: b.req.Device(), Clock: loop,
		Traffic: generator.Traffic{PostIntervalNs: 1000}})
	if err == nil {
		t.Fatal("NewRequester(PostIntervalNs 1000, no After) = nil error, want an error")
	}
	for _, tr := range []generator.Traffic{{MinRNRTimer: new(uint8(32))}, {RNRRetry: new(uint8(8))}, {PostIntervalNs: -1}} {
		if _, err := generator.NewRequester(generator.RequesterConfig{Device: b.req.Device(), Clock: loop, Traffic: tr,
			After: func(time.Duration, func()) {}}); err == nil {
			t.Errorf("NewRequester(%+v) = nil error, want out of range", tr)
		}
	}
}

// TestRNRAttrs: min_rnr_timer and rnr_retry reach both sides' QPs, with
// the defaults 12 and 7 when not set.
func TestRNRAttrs(t *testing.T) {
	tests := []struct {
		name         string
		tr           generator.Traffic
		timer, retry uint8
	}{
		{"defaults", generator.Traffic{NumQPs: 2}, 12, 7},
		{"set", generator.Traffic{NumQPs: 2, MinRNRTimer: new(uint8(14)), RNRRetry: new(uint8(3))}, 14, 3},
		{"zero set", generator.Traffic{NumQPs: 2, MinRNRTimer: new(uint8(0)), RNRRetry: new(uint8(0))}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, req, rsp := watched(t, tt.tr)
			for side, attrs := range map[string][]generator.ConnectAttr{"requester": req, "responder": rsp} {
				if len(attrs) != 2 {
					t.Fatalf("%s: %d QPs connected, want 2", side, len(attrs))
				}
				for i, c := range attrs {
					a, err := c.WithDefaults()
					if err != nil || a.MinRNRTimer != tt.timer || a.RNRRetry != tt.retry {
						t.Errorf("%s QP %d: (MinRNRTimer, RNRRetry) = (%d, %d) (%v), want (%d, %d)",
							side, i, a.MinRNRTimer, a.RNRRetry, err, tt.timer, tt.retry)
					}
				}
			}
		})
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
