package report

import "github.com/netlumina/lumina/analyzers/model"

// Point classes of the sequence diagram.
const (
	ClassData = iota
	ClassRetx
	ClassDrop
	ClassCorrupt
	ClassECN
	ClassAck
	ClassNAK
	ClassCNP
	NumClasses
)

// ClassNames name the classes in legends.
var ClassNames = [NumClasses]string{"data", "retransmission", "drop", "corrupt", "ECN mark", "ACK", "NAK", "CNP"}

// Limits of the collected plot data.
const (
	MaxPlotConns   = 16   // connections with a sequence diagram
	MaxClassPoints = 1000 // points kept per class and connection
)

// Pt is one point: time (ns, trace clock) and PSN relative to the IPSN.
type Pt struct {
	T   int64
	PSN int32
}

// series is a decimated point buffer: it keeps every stride-th point and
// halves itself (doubling the stride) when full.
type series struct {
	pts    []Pt
	stride int
	n      int
}

func (s *series) add(p Pt) {
	if s.n%s.stride == 0 {
		if len(s.pts) == cap(s.pts) {
			k := 0
			for i := 0; i < len(s.pts); i += 2 {
				s.pts[k] = s.pts[i]
				k++
			}
			s.pts = s.pts[:k]
			s.stride *= 2
			if s.n%s.stride != 0 {
				s.n++
				return
			}
		}
		s.pts = append(s.pts, p)
	}
	s.n++
}

// ConnSeries are one connection's points.
type ConnSeries struct {
	Conn    int
	Classes [NumClasses][]Pt
	// Seen counts the points offered per class (before decimation).
	Seen [NumClasses]int
}

// Plots is the data behind report.html's sequence diagrams.
type Plots struct {
	T0   int64 // first timestamp of the trace
	Seqs []ConnSeries
}

// SeqCollector gathers sequence-diagram points during the pass. Add does
// not allocate: buffers are allocated once per connection on first use.
type SeqCollector struct {
	table   *model.Table
	conns   []*connBuf
	t0      int64
	started bool
}

type connBuf struct {
	cls     [NumClasses]series
	lastPSN int32
}

// NewSeqCollector returns a collector for the first MaxPlotConns
// connections of t.
func NewSeqCollector(t *model.Table) *SeqCollector {
	return &SeqCollector{table: t, conns: make([]*connBuf, min(len(t.Conns), MaxPlotConns))}
}

// Add records p.
func (c *SeqCollector) Add(p *model.Pkt) {
	if !c.started {
		c.t0, c.started = p.TimeNs, true
	}
	if p.Conn < 0 || p.Conn >= len(c.conns) {
		return
	}
	b := c.conns[p.Conn]
	if b == nil {
		b = &connBuf{}
		for i := range b.cls {
			b.cls[i] = series{pts: make([]Pt, 0, MaxClassPoints), stride: 1}
		}
		c.conns[p.Conn] = b
	}
	rel := int32(c.table.Rel(p.Conn, p.PSN))
	pt := Pt{p.TimeNs, rel}
	switch p.Kind {
	case model.KindData, model.KindReadResp:
		b.lastPSN = rel
		switch {
		case p.Event == 1: // drop
			b.cls[ClassDrop].add(pt)
		case p.Event == 3:
			b.cls[ClassCorrupt].add(pt)
		case p.CE:
			b.cls[ClassECN].add(pt)
		}
		if p.Retx {
			b.cls[ClassRetx].add(pt)
		} else {
			b.cls[ClassData].add(pt)
		}
	case model.KindReadReq:
		if p.Retx { // a re-issued READ: the NAK's role
			b.cls[ClassNAK].add(pt)
		} else {
			b.cls[ClassData].add(pt)
		}
	case model.KindAck:
		b.cls[ClassAck].add(pt)
	case model.KindNak, model.KindNakFatal, model.KindRNR:
		b.cls[ClassNAK].add(pt)
	case model.KindCNP:
		b.cls[ClassCNP].add(Pt{p.TimeNs, b.lastPSN})
	}
}

// Plots returns the collected data.
func (c *SeqCollector) Plots() *Plots {
	pl := &Plots{T0: c.t0}
	for i, b := range c.conns {
		if b == nil {
			continue
		}
		cs := ConnSeries{Conn: c.table.Conns[i].ID}
		for k := range b.cls {
			cs.Classes[k] = b.cls[k].pts
			cs.Seen[k] = b.cls[k].n
		}
		pl.Seqs = append(pl.Seqs, cs)
	}
	return pl
}
