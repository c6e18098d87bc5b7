package report

import (
	"compress/gzip"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"fmt"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/rnr"
	"github.com/netlumina/lumina/roce"
)

// The plotting library (scripts/fetch-uplot.sh fetches the pinned release
// from npm, checksum verified; uplot/LICENSE is its license) and the
// page's own script and style.
var (
	//go:embed uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed uplot/uPlot.min.css
	uplotCSS string
	//go:embed assets/page.js
	pageJS string
	//go:embed assets/page.css
	pageCSS string
	// rnrJS draws the rnr check's marks; the page has it only when it has
	// marks (pageData.RNR).
	//go:embed assets/rnr.js
	rnrJS string
)

// pageData is the JSON the page's script reads (element #lumina-data).
type pageData struct {
	// T0 is the graph time origin in ns (a string: beyond 2^53).
	T0      string      `json:"t0"`
	Conns   []pageConn  `json:"conns"`
	Tuples  []pageTuple `json:"tuples"`
	Classes []string    `json:"classes"`
	// Names used by the decode line, from the roce package's String
	// methods: opcodes and events present, ACK types, NAK codes, ICRC
	// statuses.
	Ops      map[int]string `json:"ops"`
	Events   map[int]string `json:"events"`
	AckTypes []string       `json:"ackTypes"`
	NAKs     []string       `json:"naks"`
	ICRC     []string       `json:"icrc"`
	Losses   []pageLoss     `json:"losses"`
	Pauses   []pagePause    `json:"pauses"`
	// Watchdogs are the PFC watchdog firings the pfc analyzer inferred
	// (pfc.Result.Watchdogs), drawn as markers on every graph.
	Watchdogs []pageWatchdog `json:"watchdogs"`
	Timeouts  []float64      `json:"timeouts"` // timeout intervals, ns
	Dropped   int            `json:"dropped"`
	// RNR are the rnr check's marks (RNR waits, silent timeouts), drawn
	// by assets/rnr.js; absent without them (the page is then as before
	// the rnr check).
	RNR []pageRNR `json:"rnr,omitempty"`
}

// pageRNR is one mark of the rnr check on a connection's graph: an
// interval from S to E (ns after T0) shaded, with a label.
type pageRNR struct {
	Conn int `json:"conn"`
	// Kind is "wait" (an RNR wait at least the timer), "short" (one
	// shorter than the timer, or inconclusive) or "silent" (a silent
	// timeout's stall).
	Kind  string `json:"kind"`
	S     int64  `json:"s"`
	E     int64  `json:"e"`
	Label string `json:"label"`
}

// rnrMarks returns the rnr check's marks with times after t0.
func rnrMarks(r *Report, t0 int64) []pageRNR {
	var out []pageRNR
	x := &r.Checks.RNR
	for _, w := range x.Waits {
		if w.WaitNs == nil {
			continue
		}
		kind := "wait"
		if w.Verdict != model.Pass {
			kind = "short"
		}
		out = append(out, pageRNR{Conn: w.Conn, Kind: kind, S: w.TimeNs - t0, E: w.TimeNs + *w.WaitNs - t0,
			Label: fmt.Sprintf("RNR wait psn %d: %s (%g× timer %s) %s", w.PSN, dur(*w.WaitNs), w.Ratio, dur(w.TimerNs), w.Verdict)})
	}
	for _, st := range x.Stalls {
		if st.Class != rnr.ClassSilentTimeout {
			continue
		}
		out = append(out, pageRNR{Conn: st.Conn, Kind: "silent", S: st.TimeNs - st.StallNs - t0, E: st.TimeNs - t0,
			Label: fmt.Sprintf("silent timeout psn %d: %s", st.PSN, dur(st.StallNs))})
	}
	return out
}

type pageTuple struct {
	Prefix string `json:"p"`
	QP     string `json:"q"` // as decode prints it after "qp=0x"
}

// pageConn is one graph: its packets as little-endian columns, gzipped and
// base64-encoded (Data); Cols gives each column's name, type and byte
// offset in the inflated buffer. Delta-coded columns (t, cap, idx, seq,
// ts) hold the difference from the previous packet, so that float64 holds
// them exactly.
type pageConn struct {
	ID int `json:"id"`
	// C0 is the capture time of the first packet in ns (a string: beyond
	// 2^53); the cap column is delta-coded from it, as capture and switch
	// clocks may be far apart (epoch against a 48-bit counter).
	C0     string     `json:"c0"`
	Title  string     `json:"title"`
	N      int        `json:"n"`
	Counts []int      `json:"counts"`
	Cols   [][3]any   `json:"cols"`
	Data   string     `json:"data"`
	Reth   []pageReth `json:"reth"`
}

type pageReth struct {
	I    int    `json:"i"`
	VA   string `json:"va"` // hex, as decode prints it
	RKey string `json:"rkey"`
	DLen uint32 `json:"dlen"`
}

type pageLoss struct {
	Conn    int    `json:"conn"`
	RelPSN  int    `json:"rel"`
	Iter    int    `json:"iter"`
	Index   int    `json:"index"`
	RetxIdx int    `json:"retx_index"`
	Event   string `json:"event"`
	Kind    string `json:"kind"`
	Gen     *int64 `json:"gen"`
	React   *int64 `json:"react"`
	Retx    *int64 `json:"retx"`
	TimeNs  int64  `json:"t"`
}

type pagePause struct {
	Start     int64  `json:"s"` // ns after T0
	End       int64  `json:"e"`
	Port      uint16 `json:"port"`
	Host      string `json:"host"`
	Priority  int    `json:"prio"`
	Direction string `json:"dir"`
}

// pageWatchdog is one PFC watchdog firing (pfc.Watchdog).
type pageWatchdog struct {
	T        int64  `json:"t"` // ns after T0
	Kind     string `json:"kind"`
	Port     uint16 `json:"port"`
	Host     string `json:"host"`
	Priority int    `json:"prio"`
	Detail   string `json:"detail"`
}

// column is one typed column of a graph's buffer.
type column struct {
	name, typ string
	size      int
	put       func(b []byte, r *pktRec, prev *pktRec)
}

var columns = []column{
	{"t", "f64", 8, func(b []byte, r, p *pktRec) { putF64(b, float64(r.t-p.t)) }},
	{"cap", "f64", 8, func(b []byte, r, p *pktRec) { putF64(b, float64(r.cap-p.cap)) }},
	{"seq", "f64", 8, func(b []byte, r, p *pktRec) { putF64(b, float64(r.seq)-float64(p.seq)) }},
	{"ts", "f64", 8, func(b []byte, r, p *pktRec) { putF64(b, float64(r.ts)-float64(p.ts)) }},
	{"idx", "i32", 4, func(b []byte, r, p *pktRec) { binary.LittleEndian.PutUint32(b, r.idx-p.idx) }},
	{"rel", "i32", 4, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint32(b, uint32(r.rel)) }},
	{"psn", "u32", 4, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint32(b, r.psn) }},
	{"aeth", "u32", 4, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint32(b, r.aeth) }},
	{"reth", "i32", 4, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint32(b, uint32(r.reth)) }},
	{"fl", "u16", 2, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint16(b, r.flags) }},
	{"tup", "u16", 2, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint16(b, r.tup) }},
	{"len", "u16", 2, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint16(b, r.plen) }},
	{"cls", "u8", 1, func(b []byte, r, _ *pktRec) { b[0] = r.cls }},
	{"op", "u8", 1, func(b []byte, r, _ *pktRec) { b[0] = r.op }},
	{"ev", "u8", 1, func(b []byte, r, _ *pktRec) { b[0] = r.ev }},
	{"hold", "u16", 2, func(b []byte, r, _ *pktRec) { binary.LittleEndian.PutUint16(b, r.hold) }},
}

func putF64(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) }

// encodeConn encodes c's packets for the page, sorted by graph time
// (stable: trace order within a timestamp). It streams the columns
// through the compressor: the only copy of the packets it makes is when
// they are not already in time order.
func encodeConn(c *ConnPackets, t0 int64, title string, zw *gzip.Writer) (pageConn, error) {
	chunks := c.chunks
	sorted, first := true, true
	var lastT int64
	c.all(func(r *pktRec) {
		if !first && r.t < lastT {
			sorted = false
		}
		first, lastT = false, r.t
	})
	if !sorted {
		recs := make([]pktRec, 0, c.n)
		for _, ch := range chunks {
			recs = append(recs, ch...)
		}
		slices.SortStableFunc(recs, func(a, b pktRec) int {
			switch {
			case a.t < b.t:
				return -1
			case a.t > b.t:
				return 1
			}
			return 0
		})
		chunks = [][]pktRec{recs}
	}
	n := c.n
	pc := pageConn{ID: c.Conn, Title: title, N: n, Counts: c.Count[:], Reth: []pageReth{}}
	var first0 pktRec
	if n > 0 {
		for _, ch := range chunks {
			if len(ch) > 0 {
				first0 = ch[0]
				break
			}
		}
		pc.C0 = strconv.FormatInt(first0.cap, 10)
	}
	j := 0
	for _, ch := range chunks {
		for k := range ch {
			if r := &ch[k]; r.reth >= 0 {
				x := c.reth[r.reth]
				pc.Reth = append(pc.Reth, pageReth{I: j, VA: strconv.FormatUint(x.va, 16), RKey: strconv.FormatUint(uint64(x.rkey), 16), DLen: x.dlen})
			}
			j++
		}
	}
	var sb strings.Builder
	enc := base64.NewEncoder(base64.StdEncoding, &sb)
	zw.Reset(enc)
	buf := make([]byte, 0, 64<<10)
	off := 0
	for _, col := range columns {
		pad := (off+col.size-1)/col.size*col.size - off
		buf = append(buf, make([]byte, pad)...)
		off += pad
		pc.Cols = append(pc.Cols, [3]any{col.name, col.typ, off})
		off += n * col.size
		prev := pktRec{t: t0, cap: first0.cap}
		for _, ch := range chunks {
			for k := range ch {
				r := &ch[k]
				if len(buf)+col.size > cap(buf) {
					if _, err := zw.Write(buf); err != nil {
						return pc, err
					}
					buf = buf[:0]
				}
				buf = buf[:len(buf)+col.size]
				col.put(buf[len(buf)-col.size:], r, &prev)
				prev = *r
			}
		}
	}
	if _, err := zw.Write(buf); err != nil {
		return pc, err
	}
	if err := zw.Close(); err != nil {
		return pc, err
	}
	if err := enc.Close(); err != nil {
		return pc, err
	}
	pc.Data = sb.String()
	return pc, nil
}

// encodePlots encodes every graph of pl for the page, releasing each
// connection's records once encoded.
func encodePlots(pl *Plots, conns []model.Connection) (*plotPage, error) {
	pg := &plotPage{ops: map[int]string{}, events: map[int]string{}}
	zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed) // one for every connection (Reset)
	if err != nil {
		return nil, err
	}
	named := make(map[int]string, len(conns))
	for _, cn := range conns {
		named[cn.ID] = "Connection " + ConnString(cn)
	}
	for i := range pl.Conns {
		c := &pl.Conns[i]
		title, ok := named[c.Conn]
		if !ok {
			title = "Connection " + strconv.Itoa(c.Conn)
		}
		c.all(func(r *pktRec) {
			if _, ok := pg.ops[int(r.op)]; !ok {
				pg.ops[int(r.op)] = roce.Opcode(r.op).String()
			}
			if _, ok := pg.events[int(r.ev)]; !ok {
				pg.events[int(r.ev)] = roce.Event(r.ev).String()
			}
		})
		pc, err := encodeConn(c, pl.T0, title, zw)
		if err != nil {
			return nil, err
		}
		pg.conns = append(pg.conns, pc)
		c.chunks, c.reth = nil, nil
	}
	return pg, nil
}

// graphData builds the page's JSON.
func graphData(r *Report) (template.JS, error) {
	d := pageData{Classes: ClassNames[:], Ops: map[int]string{}, Events: map[int]string{}, Conns: []pageConn{},
		Tuples: []pageTuple{}, Losses: []pageLoss{}, Pauses: []pagePause{}, Watchdogs: []pageWatchdog{}, Timeouts: []float64{}}
	for t := roce.AckTypeACK; t <= roce.AckTypeNAK; t++ {
		d.AckTypes = append(d.AckTypes, t.String())
	}
	for c := roce.NAKCode(0); c <= roce.NAKInvalidRDRequest; c++ {
		d.NAKs = append(d.NAKs, c.String())
	}
	for s := roce.ICRCUnchecked; s <= roce.ICRCTruncated; s++ {
		d.ICRC = append(d.ICRC, s.String())
	}
	var t0 int64
	if pl := r.Plots; pl != nil {
		t0 = pl.T0
		d.Dropped = pl.Dropped
		for _, t := range pl.Tuples {
			d.Tuples = append(d.Tuples, pageTuple{t.Prefix, string(appendHex(nil, uint64(t.QP), 6))})
		}
		if pl.page == nil {
			pg, err := encodePlots(pl, r.Connections)
			if err != nil {
				return "", err
			}
			pl.page = pg
		}
		d.Conns = append(d.Conns, pl.page.conns...)
		for k, v := range pl.page.ops {
			d.Ops[k] = v
		}
		for k, v := range pl.page.events {
			d.Events[k] = v
		}
	}
	d.T0 = strconv.FormatInt(t0, 10)
	for _, l := range r.Checks.Retransmission.Losses {
		d.Losses = append(d.Losses, pageLoss{Conn: l.Conn, RelPSN: l.RelPSN, Iter: l.Iter, Index: l.Index, RetxIdx: l.RetxIndex,
			Event: l.Event, Kind: l.Kind, Gen: l.NACKGenerationNs, React: l.NACKReactionNs, Retx: l.RetransmissionNs, TimeNs: l.TimeNs - t0})
	}
	for _, e := range r.PFC.Episodes {
		d.Pauses = append(d.Pauses, pagePause{Start: e.StartNs - t0, End: e.EndNs - t0, Port: e.Port, Host: e.Host, Priority: e.Priority, Direction: e.Direction})
	}
	for _, w := range r.PFC.Watchdogs {
		d.Watchdogs = append(d.Watchdogs, pageWatchdog{T: w.AtNs - t0, Kind: w.Kind, Port: w.Port, Host: w.Host, Priority: w.Priority, Detail: w.Detail})
	}
	for _, t := range r.Checks.Timeout.Timeouts {
		for _, v := range t.IntervalsNs {
			d.Timeouts = append(d.Timeouts, float64(v))
		}
	}
	d.RNR = rnrMarks(r, t0)
	b, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	return template.JS(b), nil // JSON: <, > and & are escaped by encoding/json
}

func appendHex(b []byte, v uint64, width int) []byte {
	s := strconv.FormatUint(v, 16)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// UPlot returns the embedded uPlot script and style sheet, for the other
// pages drawn with it (lumina diff's).
func UPlot() (js, css string) { return uplotJS, uplotCSS }
