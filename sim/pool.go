package sim

import "math/bits"

// bufPool recycles frame buffers in power-of-two size classes, so that
// steady-state forwarding does not allocate. It belongs to one Network and,
// like it, is used only on the loop goroutine: it needs no lock, which is
// why it is not a sync.Pool.
type bufPool struct {
	classes [64][][]byte // classes[c] holds buffers with cap 1<<c
}

// minBufClass is the smallest class: 64-byte buffers.
const minBufClass = 6

func bufClass(n int) int {
	if n <= 1<<minBufClass {
		return minBufClass
	}
	return bits.Len(uint(n - 1))
}

// get returns a buffer of length n. Its contents are garbage.
func (p *bufPool) get(n int) []byte {
	c := bufClass(n)
	if free := p.classes[c]; len(free) > 0 {
		b := free[len(free)-1]
		free[len(free)-1] = nil
		p.classes[c] = free[:len(free)-1]
		return b[:n]
	}
	return make([]byte, n, 1<<c)
}

// put returns a buffer obtained from get.
func (p *bufPool) put(b []byte) {
	c := bits.TrailingZeros(uint(cap(b)))
	p.classes[c] = append(p.classes[c], b[:0])
}

// frameQueue is a FIFO of frame buffers in a growable ring.
type frameQueue struct {
	buf        [][]byte // len is a power of two (or 0)
	head, tail uint     // pop at head, push at tail; tail-head = length
}

func (q *frameQueue) len() int { return int(q.tail - q.head) }

func (q *frameQueue) push(b []byte) {
	if q.len() == len(q.buf) {
		n := max(2*len(q.buf), 16)
		nb := make([][]byte, n)
		for i := range q.len() {
			nb[i] = q.buf[(q.head+uint(i))&uint(len(q.buf)-1)]
		}
		q.tail = uint(q.len())
		q.head = 0
		q.buf = nb
	}
	q.buf[q.tail&uint(len(q.buf)-1)] = b
	q.tail++
}

func (q *frameQueue) pop() []byte {
	i := q.head & uint(len(q.buf)-1)
	b := q.buf[i]
	q.buf[i] = nil
	q.head++
	return b
}
