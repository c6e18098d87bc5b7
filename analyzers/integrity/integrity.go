package integrity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// ErrOptions means Options cannot be used: an invalid sequence space or
// timestamp mask. NewChecker and the Check functions return it wrapped.
var ErrOptions = errors.New("integrity: invalid options")

// DefaultTimeMask is the width of the mirror timestamp: 48 bits of
// nanoseconds (about 78 hours), as in roce.MirrorTimeMask.
const DefaultTimeMask = 1<<48 - 1

// Options configure a check. The zero value checks lumina's 48-bit counters
// strictly: any first sequence number, no timestamp tolerance, an empty
// trace fails.
type Options struct {
	// Seq is the sequence counter's cycle. Default (zero)
	// trace.SeqSpace40; trace.SeqSpaceLumina31 for the public tool, whose
	// counter goes from 0x7FFFFFFF to 1. Use the same space as the merge.
	Seq trace.SeqSpace

	// ExpectFirstSeq requires the first packet of the trace to carry
	// sequence number 1 (Seq.Min if 1 is outside Seq), the number both
	// counters give the first packet after the switch starts. Use it when the switch was restarted for the
	// test, so that packets lost before the first captured one are caught.
	// Default false: the first number may be anything.
	ExpectFirstSeq bool

	// TimeMask is the timestamp counter's range, a power of two minus one.
	// Default (0) DefaultTimeMask (48 bits).
	TimeMask uint64

	// TimeToleranceNs is how far a timestamp may be before the previous
	// one without failing (clock jitter between pipes). Default 0:
	// timestamps must not decrease, except at the counter's wrap.
	TimeToleranceNs uint64

	// AllowEmpty lets an empty trace pass (if the counters agree that
	// nothing was sent). Default false: an empty trace fails with
	// "empty trace", since a test that captured nothing is more likely
	// broken than idle.
	AllowEmpty bool
}

// Count is a counter value that may be unknown. The zero value is unknown;
// use Known to make a known one.
type Count struct {
	N     uint64
	Known bool
}

// Known returns a known count of n.
func Known(n uint64) Count { return Count{N: n, Known: true} }

// String returns the count in decimal, or "unknown".
func (c Count) String() string {
	if !c.Known {
		return "unknown"
	}
	return strconv.FormatUint(c.N, 10)
}

// Counters are the counters collected after the test, besides the trace:
// the switch's and the dumpers' counts the integrity conditions compare
// the trace with (not a NIC's counters, model.Counters).
// Unknown counters (the zero Count) skip the conditions that need them, and
// the Verdict lists those conditions as skipped.
type Counters struct {
	// SwitchRoCEReceived is the number of RoCE packets the switch received
	// from the traffic generators: the sum of the ingress RoCE counters of
	// the generator-facing ports, dropped packets included (the switch
	// mirrors at ingress, before its own drops).
	SwitchRoCEReceived Count

	// SwitchMirrored is the number of mirror copies the switch sent to the
	// dumpers: the sum of the mirror ports' egress counters, or the
	// injector's mirror counter.
	SwitchMirrored Count

	// Dumpers are the dumpers' own counters, in the order of the trace's
	// sources (the MergeSource order): Dumpers[i] describes source i.
	Dumpers []DumperCounters

	// Switches describe the logical switches of a fabric, indexed by the
	// switch id their copies carry (roce.MirrorMeta.Switch): names for the
	// reasons and each switch's own sequence counter. Nil: one switch, or
	// unknown (reasons say "switch 3").
	Switches []SwitchCounters
}

// SwitchCounters are what is known of one logical switch.
type SwitchCounters struct {
	// Name names the switch in reasons ("switch tor1: gap: …"). Default
	// "switch N" with N its id.
	Name string

	// LastSeq is the last mirror sequence number the switch assigned, read
	// from it after the test: its sequence counts from 1, so the trace must
	// hold LastSeq copies of it (condition mirrored). Unknown skips that
	// switch's count.
	LastSeq Count
}

// DumperCounters are what one dumper reports.
type DumperCounters struct {
	// Name names the dumper in reasons. Default: the checker's name for
	// the source, else "dumper-N".
	Name string

	// Captured is the number of packets the dumper wrote to its file.
	Captured Count

	// Dropped is the number of packets the dumper lost: kernel or NIC
	// drops (e.g. rx_discards_phy, imissed) and buffer overflow.
	Dropped Count

	// Cause, if set, says why the dumper dropped packets and what to
	// change; the reason of a failed dumpers condition gives it instead of
	// the generic "kernel drops or buffer overflow".
	Cause string
}

// Status is the outcome of one condition.
type Status uint8

// Statuses. The zero value is invalid.
const (
	Passed  Status = 1 // the condition was checked and holds
	Failed  Status = 2 // the condition was checked and does not hold
	Skipped Status = 3 // the data the condition needs is not available
)

// String returns "pass", "fail" (model.Pass and model.Fail), "skipped"
// (report.json's integrity.checks spell it so, unlike model.Skip) or
// "Status(N)".
func (s Status) String() string {
	switch s {
	case Passed:
		return string(model.Pass)
	case Failed:
		return string(model.Fail)
	case Skipped:
		return "skipped"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Names of the conditions, in the order they are checked and reported.
const (
	CheckSeq       = "seq"       // 1. sequence numbers consecutive
	CheckTimestamp = "timestamp" // 2. timestamps non-decreasing, but for wraps
	CheckMirrored  = "mirrored"  // 3. packets in trace == copies mirrored
	CheckReceived  = "received"  // 4. packets in trace − duplicate copies − wrapped copies == RoCE packets received
	CheckDumpers   = "dumpers"   // 5. no dumper drops; captured == in trace
)

// Condition is the outcome of one condition of the integrity check (the
// sibling analyzers' Result is a whole check's; here Verdict is).
type Condition struct {
	Name   string // one of the Check* names
	Status Status
	// Reason says why the condition failed or was skipped; "" when it
	// passed. The formats are stable; see the package documentation.
	Reason string
	// FirstBadIndex is the trace index (0-based, in merged order) of the
	// first packet that violates the condition, or -1 when the condition
	// is not about one packet (counts) or holds.
	FirstBadIndex int
}

// Verdict is the outcome of a check.
type Verdict struct {
	// Pass is true when no condition failed. Skipped conditions do not
	// fail a verdict; look at Checks (or Skipped) to see what was checked.
	Pass bool

	// Check, Reason and FirstBadIndex describe the first failed condition,
	// in the order of Checks; "", "" and -1 when Pass.
	Check         string
	Reason        string
	FirstBadIndex int

	// Checks has one entry per condition, in order: seq, timestamp,
	// mirrored, received, dumpers.
	Checks []Condition

	// Stats counts what the trace contained.
	Stats Stats
}

// Stats counts packets and anomalies. Anomalies after the first are
// counted with the highest sequence number seen so far as reference: a
// packet that arrives late counts as a gap where it was missing and as out
// of order where it appears.
type Stats struct {
	Packets    int    // packets in the trace
	PerSource  []int  // packets per source, when sources are known
	Gaps       int    // places where sequence numbers were skipped
	Missing    uint64 // sequence numbers skipped, in all
	Duplicates int    // packets repeating the highest number so far
	OutOfOrder int    // packets before the highest number so far
	OutOfRange int    // packets whose number is outside the space
	Copies     int    // packets tagged roce.EventDuplicate: copies the switch made
	MACCopies  int    // wrapped copies of PFC/PAUSE frames (trace.IsMACMirror): mirrored, not received
	SeqWraps   int    // steps from the space's Max to its Min
	TimeBack   int    // timestamp decreases beyond the tolerance
	TimeWraps  int    // timestamp counter wraps
	FirstSeq   uint64 // first in-range sequence number (0 if none)
	LastSeq    uint64 // last sequence number (0 if empty)
}

// Skipped returns the names of the conditions that were skipped.
func (v Verdict) Skipped() []string {
	var s []string
	for _, r := range v.Checks {
		if r.Status == Skipped {
			s = append(s, r.Name)
		}
	}
	return s
}

// String returns "pass", "pass (skipped: mirrored, received)" or
// "fail: <check>: <reason>".
func (v Verdict) String() string {
	if !v.Pass {
		return "fail: " + v.Check + ": " + v.Reason
	}
	if s := v.Skipped(); len(s) > 0 {
		return "pass (skipped: " + strings.Join(s, ", ") + ")"
	}
	return "pass"
}

// where is a packet's position: its trace index, and its source and index
// within the source when known (src >= 0).
type where struct {
	index    int
	src, idx int
}

// Kinds of sequence violations.
const (
	seqOK = iota
	seqStart
	seqRange
	seqGap
	seqDup
	seqBack
)

// seqViolation is the first sequence violation, kept as numbers; the reason
// is formatted by Finish.
type seqViolation struct {
	kind      int
	sw        uint8  // the switch whose sequence it is
	seq, prev uint64 // the offending packet's number and the previous one's
	missing   uint64 // gap size
	at, prevW where
}

// tsViolation is the first timestamp violation.
type tsViolation struct {
	bad      bool
	seq      uint64
	ts, prev uint64
	at       where
	prevIdx  int
}

// Checker runs the integrity conditions over a trace in one pass, in
// constant memory: feed it every packet in merged order with Add (or
// AddFrame, or Observe as the callback of trace.Merge) and call Finish with
// the counters. Add does not allocate. A Checker is not safe for
// concurrent use.
type Checker struct {
	opt     Options
	sp      trace.SeqSpace
	tsMask  uint64
	sources []string

	n                int
	prevTs           uint64
	seqBad           seqViolation
	ts               tsViolation
	stats            Stats
	perSource        []int
	expectFirst      uint64
	haveFirstInRange bool
	sw               [roce.MaxSwitches]switchSeq
	switches         uint32 // bit i: a copy of switch i was added
}

// switchSeq is one switch's sequence as the trace shows it.
type switchSeq struct {
	hi   uint64 // highest sequence number so far (serial order)
	have bool   // an in-range number was seen
	n    int    // copies in the trace
	prev where  // its previous copy
}

// NewChecker returns a Checker for a trace whose packets come from the named
// sources (e.g. "dumper-0", "dumper-1", in trace.MergeSource order). With
// no names, sources are unknown: Add must be given src = -1, reasons locate
// packets by trace index, and dumper counters are compared in total. The
// error wraps ErrOptions.
func NewChecker(opt Options, sources ...string) (*Checker, error) {
	if err := opt.Seq.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	mask := opt.TimeMask
	if mask == 0 {
		mask = DefaultTimeMask
	}
	if mask&(mask+1) != 0 {
		return nil, fmt.Errorf("%w: time mask %#x is not a power of two minus one", ErrOptions, mask)
	}
	sp := opt.Seq
	if sp.Max == 0 {
		sp = trace.SeqSpace{Min: sp.Min, Max: trace.MirrorSeqMax}
	}
	c := &Checker{
		opt:       opt,
		sp:        sp,
		tsMask:    mask,
		sources:   sources,
		perSource: make([]int, len(sources)),
	}
	c.Reset()
	return c, nil
}

// Reset forgets every packet added, to check another trace with the same
// options and sources.
func (c *Checker) Reset() {
	clear(c.perSource)
	*c = Checker{
		opt: c.opt, sp: c.sp, tsMask: c.tsMask, sources: c.sources, perSource: c.perSource,
		expectFirst: 1,
	}
	if !c.sp.Contains(1) {
		c.expectFirst = c.sp.Min
	}
}

// Add adds the next packet of the merged trace, a copy of switch 0: its
// mirror sequence number and timestamp (ns; only the bits of
// Options.TimeMask count), its source (an index into the names given to
// NewChecker, or -1 if unknown) and its index within that source. It panics
// if src is not -1 and not a valid index. Add does not allocate.
func (c *Checker) Add(seq, tsNs uint64, src, srcIndex int) {
	c.AddSwitch(0, seq, tsNs, src, srcIndex)
}

// AddSwitch is Add for a copy of switch sw (roce.MirrorMeta.Switch, below
// roce.MaxSwitches): condition seq follows each switch's sequence
// separately; the timestamps are those of the merged trace.
func (c *Checker) AddSwitch(sw uint8, seq, tsNs uint64, src, srcIndex int) {
	at := where{index: c.n, src: src, idx: srcIndex}
	if src >= 0 {
		c.perSource[src]++
	}
	tsNs &= c.tsMask
	c.n++
	sw %= roce.MaxSwitches
	c.switches |= 1 << sw
	ss := &c.sw[sw]
	ss.n++

	if !c.sp.Contains(seq) {
		c.stats.OutOfRange++
		if c.seqBad.kind == seqOK {
			c.seqBad = seqViolation{kind: seqRange, sw: sw, seq: seq, at: at}
		}
	} else if !ss.have {
		ss.have = true
		ss.hi = seq
		if !c.haveFirstInRange {
			c.haveFirstInRange = true
			c.stats.FirstSeq = seq
		}
		if c.opt.ExpectFirstSeq && seq != c.expectFirst && c.seqBad.kind == seqOK {
			c.seqBad = seqViolation{kind: seqStart, sw: sw, seq: seq, at: at}
		}
	} else {
		switch d := c.sp.Diff(seq, ss.hi); {
		case d == 1:
			if seq < ss.hi {
				c.stats.SeqWraps++
			}
			ss.hi = seq
		case d > 1:
			if seq < ss.hi {
				c.stats.SeqWraps++
			}
			c.stats.Gaps++
			c.stats.Missing += uint64(d - 1)
			if c.seqBad.kind == seqOK {
				c.seqBad = seqViolation{kind: seqGap, sw: sw, seq: seq, prev: ss.hi, missing: uint64(d - 1), at: at, prevW: ss.prev}
			}
			ss.hi = seq
		case d == 0:
			c.stats.Duplicates++
			if c.seqBad.kind == seqOK {
				c.seqBad = seqViolation{kind: seqDup, sw: sw, seq: seq, at: at, prevW: ss.prev}
			}
		default:
			c.stats.OutOfOrder++
			if c.seqBad.kind == seqOK {
				c.seqBad = seqViolation{kind: seqBack, sw: sw, seq: seq, prev: ss.hi, at: at, prevW: ss.prev}
			}
		}
	}
	c.stats.LastSeq = seq
	ss.prev = at

	if at.index > 0 {
		// Forward (or equal) when less than half the counter ahead;
		// otherwise a decrease, unless that is a wrap.
		if fwd := (tsNs - c.prevTs) & c.tsMask; fwd > c.tsMask>>1 {
			if back := (c.prevTs - tsNs) & c.tsMask; back > c.opt.TimeToleranceNs {
				c.stats.TimeBack++
				if !c.ts.bad {
					c.ts = tsViolation{bad: true, seq: seq, ts: tsNs, prev: c.prevTs, at: at, prevIdx: at.index - 1}
				}
			}
		} else if tsNs < c.prevTs {
			c.stats.TimeWraps++
		}
	}
	c.prevTs = tsNs
}

// AddEvent is Add for a packet whose mirror copy reports event ev. A
// packet tagged roce.EventDuplicate is an extra copy the switch made of the
// packet before it: it is mirrored (condition mirrored counts it) but was
// not received from a generator (condition received does not). Other
// events, and invalid ones, count as received packets. It does not
// allocate.
func (c *Checker) AddEvent(seq, tsNs uint64, ev roce.Event, src, srcIndex int) {
	c.addEvent(0, seq, tsNs, ev, src, srcIndex)
}

func (c *Checker) addEvent(sw uint8, seq, tsNs uint64, ev roce.Event, src, srcIndex int) {
	if ev == roce.EventDuplicate {
		c.stats.Copies++
	}
	c.AddSwitch(sw, seq, tsNs, src, srcIndex)
}

// AddMAC is Add for a wrapped mirror copy (trace.IsMACMirror): the copy of
// a PFC or PAUSE frame the switch received or sent. It takes its place in
// the sequence and in the mirrored count like any copy, but is no RoCE
// packet, so condition received does not count it, whatever its event. It
// does not allocate.
func (c *Checker) AddMAC(seq, tsNs uint64, src, srcIndex int) {
	c.addMAC(0, seq, tsNs, src, srcIndex)
}

func (c *Checker) addMAC(sw uint8, seq, tsNs uint64, src, srcIndex int) {
	c.stats.MACCopies++
	c.AddSwitch(sw, seq, tsNs, src, srcIndex)
}

// AddFrame adds a mirror copy: it reads the switch, sequence number and
// timestamp from the frame's first 12 bytes (trace.MirrorSwitchSeq), then
// adds it as AddMAC does for a wrapped copy (trace.IsMACMirror), else as
// AddEvent does with the event of the IPv4 TTL or IPv6 hop limit. It
// reports false, adding nothing, if the frame is too short to be a mirror
// copy. It does not allocate.
func (c *Checker) AddFrame(frame []byte, src, srcIndex int) bool {
	f := ParseFrame(frame)
	c.AddParsedFrame(&f, src, srcIndex)
	return f.OK
}

// Frame is what AddFrame reads of a frame: ParseFrame reads it (without
// the checker's state, so frames can be parsed on several goroutines) and
// AddParsedFrame adds it, in trace order.
type Frame struct {
	TsNs, Seq uint64
	Switch    uint8
	Event     roce.Event
	MAC       bool // a wrapped MAC Control copy (trace.IsMACMirror)
	OK        bool // long enough to be a mirror copy
}

// ParseFrame reads the mirror fields of frame for AddParsedFrame.
func ParseFrame(frame []byte) Frame {
	sw, seq, ts, ok := trace.MirrorSwitchSeq(frame)
	if !ok {
		return Frame{}
	}
	if trace.IsMACMirror(frame) {
		return Frame{TsNs: ts, Seq: seq, Switch: sw, MAC: true, OK: true}
	}
	return Frame{TsNs: ts, Seq: seq, Switch: sw, Event: roce.FrameEvent(frame), OK: true}
}

// MirrorFrame is the Frame ParseFrame returns for an untagged IPv4 mirror
// copy whose source MAC (switch and sequence number) is seqField, whose
// destination MAC (timestamp) is tsNs and whose TTL is ttl: for a caller
// that read these fields already (model.Decoder.LastMirrorFields).
func MirrorFrame(seqField, tsNs uint64, ttl uint8) Frame {
	var f Frame
	f.SetMirror(seqField, tsNs, ttl)
	return f
}

// SetMirror sets every field of f to MirrorFrame(seqField, tsNs, ttl)
// in place: a Frame built whole and then copied is written in narrow
// stores and read back in wider loads, which stalls store forwarding
// (Intel 64 and IA-32 Architectures Optimization Reference Manual,
// "Store Forwarding") on every packet of a pass with workers.
func (f *Frame) SetMirror(seqField, tsNs uint64, ttl uint8) {
	sw, seq := roce.SplitMirrorSeq(seqField)
	f.TsNs, f.Seq, f.Switch, f.Event, f.MAC, f.OK = tsNs, seq, sw, roce.Event(ttl&7), false, true
}

// AddMirrorFields is AddParsedFrame of MirrorFrame(seqField, tsNs, ttl),
// without the Frame: the common packet's call, from the fields the
// decoder read.
func (c *Checker) AddMirrorFields(seqField, tsNs uint64, ttl uint8, src, srcIndex int) {
	sw, seq := roce.SplitMirrorSeq(seqField)
	c.addEvent(sw, seq, tsNs, roce.Event(ttl&7), src, srcIndex)
}

// AddParsedFrame is AddFrame of the frame ParseFrame read as f.
func (c *Checker) AddParsedFrame(f *Frame, src, srcIndex int) {
	switch {
	case !f.OK:
	case f.MAC:
		c.addMAC(f.Switch, f.Seq, f.TsNs, src, srcIndex)
	default:
		c.addEvent(f.Switch, f.Seq, f.TsNs, f.Event, src, srcIndex)
	}
}

// Observe adds p, which came from source src at index p.Index within it.
// Its signature is trace.Merge's callback, so a Checker can check a merge
// as it happens: trace.Merge(chk.Observe, srcs...). The checker must have
// been created with one name per source, and with the same sequence space as
// the merge. Observe returns an error wrapping trace.ErrNotMirrorCopy for a
// frame that is not Ethernet or is too short. It does not allocate.
func (c *Checker) Observe(src int, p trace.Packet) error {
	if p.LinkType != trace.LinkTypeEthernet || !c.AddFrame(p.Data, src, p.Index) {
		return fmt.Errorf("integrity: trace index %d: %w (link type %v, %d bytes)", c.n, trace.ErrNotMirrorCopy, p.LinkType, len(p.Data))
	}
	return nil
}

// Packets returns the number of packets added so far.
func (c *Checker) Packets() int { return c.n }

// Finish evaluates the conditions over the packets added so far and the
// counters, and returns the verdict. It does not change the Checker: more
// packets may be added and Finish called again.
func (c *Checker) Finish(cnt Counters) Verdict {
	v := Verdict{Pass: true, FirstBadIndex: -1, Stats: c.stats}
	v.Stats.Packets = c.n
	if len(c.perSource) > 0 {
		v.Stats.PerSource = append([]int(nil), c.perSource...)
	}
	v.Checks = []Condition{
		c.seqResult(cnt.Switches),
		c.tsResult(),
		c.mirroredResult(cnt),
		c.receivedResult(cnt.SwitchRoCEReceived),
		c.dumperResult(cnt.Dumpers),
	}
	for _, r := range v.Checks {
		if r.Status == Failed {
			v.Pass = false
			v.Check, v.Reason, v.FirstBadIndex = r.Name, r.Reason, r.FirstBadIndex
			break
		}
	}
	// A dumper that dropped packets explains a gap or a short count: the
	// reason names it even when an earlier condition failed first.
	if d := v.Checks[len(v.Checks)-1]; d.Status == Failed && v.Check != d.Name && dropped(cnt.Dumpers) {
		v.Reason += "; " + d.Reason
	}
	return v
}

func pass(name string) Condition { return Condition{Name: name, Status: Passed, FirstBadIndex: -1} }

func fail(name string, index int, format string, args ...any) Condition {
	return Condition{Name: name, Status: Failed, Reason: fmt.Sprintf(format, args...), FirstBadIndex: index}
}

func skip(name, reason string) Condition {
	return Condition{Name: name, Status: Skipped, Reason: reason, FirstBadIndex: -1}
}

// sourceName names source src.
func (c *Checker) sourceName(src int) string {
	if src < len(c.sources) && c.sources[src] != "" {
		return c.sources[src]
	}
	return "dumper-" + strconv.Itoa(src)
}

// loc formats a packet's position: "dumper-2 #517", or "index 1039" when
// its source is unknown.
func (c *Checker) loc(w where) string {
	if w.src < 0 {
		return "index " + strconv.Itoa(w.index)
	}
	return c.sourceName(w.src) + " #" + strconv.Itoa(w.idx)
}

// srcSuffix returns " (dumper-2 #517)", or "" when the source is unknown.
func (c *Checker) srcSuffix(w where) string {
	if w.src < 0 {
		return ""
	}
	return " (" + c.loc(w) + ")"
}

// fabric reports whether the trace holds copies of a switch other than 0:
// then reasons name the switch.
func (c *Checker) fabric() bool { return c.switches&^1 != 0 }

// switchName names switch sw: its Counters name, else "switch N".
func switchName(sws []SwitchCounters, sw uint8) string {
	if int(sw) < len(sws) && sws[sw].Name != "" {
		return "switch " + sws[sw].Name
	}
	return "switch " + strconv.Itoa(int(sw))
}

func (c *Checker) seqResult(sws []SwitchCounters) Condition {
	r := c.seqResult1()
	if r.Status == Failed && c.fabric() && c.n > 0 {
		r.Reason = switchName(sws, c.seqBad.sw) + ": " + r.Reason
	}
	return r
}

func (c *Checker) seqResult1() Condition {
	if c.n == 0 {
		if c.opt.AllowEmpty {
			return pass(CheckSeq)
		}
		return fail(CheckSeq, -1, "empty trace")
	}
	b := c.seqBad
	switch b.kind {
	case seqStart:
		return fail(CheckSeq, b.at.index, "start: first packet has seq %d%s, want %d", b.seq, c.srcSuffix(b.at), c.expectFirst)
	case seqRange:
		sp := c.sp
		return fail(CheckSeq, b.at.index, "range: seq %d at trace index %d%s is outside %d..%d", b.seq, b.at.index, c.srcSuffix(b.at), sp.Min, sp.Max)
	case seqGap:
		first := c.sp.Next(b.prev)
		if b.missing == 1 {
			return fail(CheckSeq, b.at.index, "gap: seq %d missing (between %s and %s)", first, c.loc(b.prevW), c.loc(b.at))
		}
		last := c.sp.Add(b.prev, b.missing)
		return fail(CheckSeq, b.at.index, "gap: seq %d..%d missing (%d packets) (between %s and %s)", first, last, b.missing, c.loc(b.prevW), c.loc(b.at))
	case seqDup:
		return fail(CheckSeq, b.at.index, "duplicate: seq %d appears twice (%s and %s)", b.seq, c.loc(b.prevW), c.loc(b.at))
	case seqBack:
		return fail(CheckSeq, b.at.index, "out of order: seq %d after seq %d at trace index %d%s", b.seq, b.prev, b.at.index, c.srcSuffix(b.at))
	}
	return pass(CheckSeq)
}

func (c *Checker) tsResult() Condition {
	if c.n == 0 && !c.opt.AllowEmpty {
		return skip(CheckTimestamp, "empty trace")
	}
	t := c.ts
	if !t.bad {
		return pass(CheckTimestamp)
	}
	detail := "seq " + strconv.FormatUint(t.seq, 10)
	if t.at.src >= 0 {
		detail += ", " + c.loc(t.at)
	}
	return fail(CheckTimestamp, t.at.index, "timestamp: trace index %d (%s) at %d ns is before index %d at %d ns",
		t.at.index, detail, t.ts, t.prevIdx, t.prev)
}

// mirroredResult is condition mirrored: the trace's packets against the
// switch's mirror counter and, for each switch whose last sequence number
// is known (Counters.Switches), its copies against that number (its
// sequence counts from 1: as many copies as its last number); with
// Counters.Switches, no copies of a switch it does not list.
func (c *Checker) mirroredResult(cnt Counters) Condition {
	r := countResult(CheckMirrored, c.n, cnt.SwitchMirrored, "switch mirrored %d", "switch mirrored count unknown")
	if r.Status == Failed {
		return r
	}
	checked := r.Status == Passed
	// Copies of a switch the run's record does not list (a switch id
	// beyond Counters.Switches): the record does not describe the trace.
	if k := len(cnt.Switches); k > 0 {
		for id := k; id < roce.MaxSwitches; id++ {
			if n := c.sw[id].n; n > 0 {
				return fail(CheckMirrored, -1, "trace has %d copies of switch %d, the run lists %d switches (ids 0..%d)", n, id, k, k-1)
			}
		}
	}
	for id, s := range cnt.Switches {
		if id >= roce.MaxSwitches {
			break
		}
		if !s.LastSeq.Known {
			continue
		}
		checked = true
		if n := uint64(c.sw[id].n); n != s.LastSeq.N {
			return fail(CheckMirrored, -1, "count: trace has %d copies of %s, its last seq is %d", n, switchName(cnt.Switches, uint8(id)), s.LastSeq.N)
		}
	}
	if !checked {
		return r
	}
	return pass(CheckMirrored)
}

// countResult compares the trace's packet count with a counter; what is
// the reason's tail, with a %d verb for the counter.
func countResult(name string, n int, want Count, what, unknown string) Condition {
	if !want.Known {
		return skip(name, unknown)
	}
	if uint64(n) != want.N {
		return fail(name, -1, "count: trace has %d packets, "+what, n, want.N)
	}
	return pass(name)
}

// receivedResult is condition received: the packets of the trace but the
// switch's duplicate copies and the wrapped (PFC/PAUSE) copies against the
// switch's RoCE received count.
func (c *Checker) receivedResult(want Count) Condition {
	const what, unknown = "switch received %d RoCE packets", "switch received count unknown"
	dup, mac := c.stats.Copies, c.stats.MACCopies
	if (dup == 0 && mac == 0) || !want.Known {
		return countResult(CheckReceived, c.n, want, what, unknown)
	}
	if got := uint64(c.n - dup - mac); got != want.N {
		switch {
		case mac == 0:
			return fail(CheckReceived, -1, "count: trace has %d packets less %d duplicate copies, "+what, c.n, dup, want.N)
		case dup == 0:
			return fail(CheckReceived, -1, "count: trace has %d packets less %d PFC/PAUSE copies, "+what, c.n, mac, want.N)
		}
		return fail(CheckReceived, -1, "count: trace has %d packets less %d duplicate copies and %d PFC/PAUSE copies, "+what, c.n, dup, mac, want.N)
	}
	return pass(CheckReceived)
}

// packets returns "N packets", or "1 packet".
func packets(n uint64) string {
	if n == 1 {
		return "1 packet"
	}
	return strconv.FormatUint(n, 10) + " packets"
}

// dropped reports whether a dumper reports drops.
func dropped(ds []DumperCounters) bool {
	for _, d := range ds {
		if d.Dropped.Known && d.Dropped.N > 0 {
			return true
		}
	}
	return false
}

func (c *Checker) dumperResult(ds []DumperCounters) Condition {
	if len(ds) == 0 {
		return skip(CheckDumpers, "no dumper counters")
	}
	name := func(i int) string {
		if ds[i].Name != "" {
			return ds[i].Name
		}
		return c.sourceName(i)
	}
	checked := false
	for i, d := range ds {
		if d.Dropped.Known {
			checked = true
			if d.Dropped.N > 0 {
				cause := d.Cause
				if cause == "" {
					cause = "kernel drops or buffer overflow"
				}
				return fail(CheckDumpers, -1, "%s dropped %s (%s)", name(i), packets(d.Dropped.N), cause)
			}
		}
	}
	if len(c.sources) > 0 {
		if len(ds) != len(c.sources) {
			return fail(CheckDumpers, -1, "dumpers: counters for %d dumpers, trace has %d sources", len(ds), len(c.sources))
		}
		for i, d := range ds {
			if !d.Captured.Known {
				continue
			}
			checked = true
			if d.Captured.N != uint64(c.perSource[i]) {
				return fail(CheckDumpers, -1, "%s captured %s, trace has %d from it", name(i), packets(d.Captured.N), c.perSource[i])
			}
		}
	} else {
		var sum uint64
		all := true
		for _, d := range ds {
			all = all && d.Captured.Known
			sum += d.Captured.N
		}
		if all {
			checked = true
			if sum != uint64(c.n) {
				return fail(CheckDumpers, -1, "dumpers captured %s in total, trace has %d", packets(sum), c.n)
			}
		}
	}
	if !checked {
		return skip(CheckDumpers, "dumper counters unknown")
	}
	return pass(CheckDumpers)
}
