package analyzers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"

	"github.com/netlumina/lumina/analyzers/cnp"
	"github.com/netlumina/lumina/analyzers/counters"
	"github.com/netlumina/lumina/analyzers/events"
	"github.com/netlumina/lumina/analyzers/flows"
	"github.com/netlumina/lumina/analyzers/gbn"
	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/analyzers/retransmission"
	"github.com/netlumina/lumina/analyzers/rnr"
	"github.com/netlumina/lumina/analyzers/timeout"
	"github.com/netlumina/lumina/internal/safefile"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// Report is the analysis report (see package report).
type Report = report.Report

// ErrChecks is returned for an unknown check name in Options.Checks.
var ErrChecks = errors.New("analyzers: unknown check")

// ErrQP is returned for an Options.QP that is not a connection's index.
var ErrQP = errors.New("analyzers: no such connection")

// DefaultTimeoutToleranceNs is the least tolerance of the timeout bound.
const DefaultTimeoutToleranceNs = 1000

// Options configure Analyze. The zero value runs every check.
type Options struct {
	// Checks selects the checks whose verdicts the report carries (gbn,
	// retransmission, timeout, cnp, counters, rnr). Default (nil): all.
	// The rnr check (report.CheckRNR, present only on traces with an RNR
	// NAK or runs with ODP) is selected by its name, and also by a list
	// naming every check of report.AllChecks (lumina analyze's default).
	Checks []string
	// Name is the trace's name in the report. Default: the Source's.
	Name string
	// Integrity configures the integrity check of mirror traces. Default:
	// the zero integrity.Options (48-bit counters, strict timestamps).
	Integrity integrity.Options
	// MirrorPort is the UDP port of unrestored mirror copies (see
	// roce.Parser.MirrorPort). Default (0) roce.DefaultMirrorPort; -1
	// disables.
	MirrorPort int
	// TimeoutToleranceNs widens the IB timeout bound on both sides. At
	// least DefaultTimeoutToleranceNs and half of Params.RTTNs are always
	// allowed: a requester's timer may start when it receives a packet,
	// half an RTT after the switch saw it, and NIC clocks round.
	TimeoutToleranceNs int64
	// Checked, when set, is this trace's integrity verdict, already
	// computed by whoever merged it (lumina run checks while it merges, with
	// the switch and dumper counters): the analyzers report it instead of
	// checking again, so a run has one integrity verdict. Default nil:
	// checked here with Integrity and the metadata's counters.
	Checked *integrity.Verdict
	// NoPlots skips collecting the time-sequence graphs' packets
	// (report.html then has no graphs). Default false.
	NoPlots bool
	// QP, when set, restricts the analysis to one connection: *QP is its
	// 0-based index in the connections (the metadata's, else the inferred
	// ones, as the report lists them). The report then lists only that
	// connection; every check sees only its packets (the others count as
	// unattributed) and its injected events. NIC counters count every
	// connection's packets, so the counters check is skipped when the
	// trace has other connections. An index out of range is ErrQP.
	// Default nil: every connection.
	QP *int
	// Workers is the number of goroutines of Analyze's passes (shard.go):
	// all read (a pcap trace; a pcapng one has one reader) and decode
	// batches of packets, one runs the analyses in trace order; the
	// report is the same for any number.
	// Default (0): GOMAXPROCS; 1: the whole pass on the calling
	// goroutine. A Stream (lumina run) analyzes on its caller's
	// goroutine.
	Workers int
}

// Source is a trace that can be read (twice, when connections must be
// inferred).
type Source interface {
	Name() string
	Open() (io.ReadCloser, error)
}

type fileSource string

func (f fileSource) Name() string { return string(f) }
func (f fileSource) Open() (io.ReadCloser, error) {
	return safefile.Open(string(f), safefile.Options{})
}

// File returns the file at path as a Source. It opens only a regular
// file (a FIFO or a device is refused, without blocking: safefile.Open).
func File(path string) Source { return fileSource(path) }

type bytesSource struct {
	name string
	b    []byte
}

func (b bytesSource) Name() string                 { return b.name }
func (b bytesSource) Open() (io.ReadCloser, error) { return bytesReader{bytes.NewReader(b.b)}, nil }

// bytesReader is a bytes.Reader with a Close, still an io.ReaderAt (the
// passes on workers read a pcap file's chunks with ReadAt: shard.go).
type bytesReader struct{ *bytes.Reader }

func (bytesReader) Close() error { return nil }

// Bytes returns an in-memory trace as a Source.
func Bytes(name string, b []byte) Source { return bytesSource{name, b} }

// AnalyzeFile is Analyze on the pcap or pcapng file at path.
func AnalyzeFile(ctx context.Context, path string, meta model.Meta, opt Options) (*Report, error) {
	return Analyze(ctx, File(path), meta, opt)
}

// Analyze analyzes the trace src with the run metadata meta (the zero Meta
// when there is none) and returns the report. Errors are for traces that
// cannot be read or invalid options; a failed check is a report that does
// not pass (Report.Passed).
func Analyze(ctx context.Context, src Source, meta model.Meta, opt Options) (*Report, error) {
	selected, err := selectChecks(opt.Checks)
	if err != nil {
		return nil, err
	}
	if err := meta.Validate(); err != nil {
		return nil, err
	}
	name := opt.Name
	if name == "" {
		name = src.Name()
	}
	params := meta.Params
	conns := meta.Connections
	dec := decoder(meta, opt, params.MTU)
	if len(conns) == 0 {
		in := model.NewInferrer()
		d := dec
		decided := meta.Mirror != nil
		var p model.Pkt
		if w := workers(opt.Workers); w > 1 {
			err = inferShard(ctx, src, d, decided, in, w)
		} else {
			err = pass(ctx, src, func(tp *trace.Packet) {
				if !decided {
					decided = detectMirror(&d, tp)
				}
				if d.Decode(tp, &p) {
					in.Observe(&p)
				}
			})
		}
		if err != nil {
			return nil, err
		}
		conns = in.Connections()
		if params.MTU == 0 {
			params.MTU = in.MTU()
		}
	}
	s, err := newStream(meta, conns, params, opt, selected, name)
	if err != nil {
		return nil, err
	}
	if w := workers(opt.Workers); w > 1 {
		m := s.m
		err = shardPass(ctx, src, shardSpec{dec: m.dec, decided: m.decided, checkInteg: m.a.opt.Checked == nil, pfc: m.a.pfc}, w, m.consume)
	} else {
		err = pass(ctx, src, s.Packet)
	}
	if err != nil {
		return nil, err
	}
	return s.Finish(), nil
}

// ErrLinkType is returned for a trace whose link type is not Ethernet
// (the first interface's, in pcapng), which lumina decode refuses too.
var ErrLinkType = errors.New("not supported (Ethernet only)")

// ErrNoConnections is returned by NewStream for metadata without
// connections: inferring them takes a pass of its own (use Analyze).
var ErrNoConnections = errors.New("analyzers: a stream needs the connections")

// Stream analyzes a trace packet by packet as it is produced, for a caller
// that knows the connections: lumina run feeds it the merged trace while
// it merges, so the run's trace is never read back. It gives the report
// Analyze gives for the same trace and metadata.
type Stream struct {
	m        *mainPass
	meta     model.Meta
	selected map[string]bool
}

// NewStream returns a Stream for a trace named name with the run metadata
// meta, which must list the connections. opt.Checked, if set, is read by
// Finish, so it may be filled in while the packets flow.
func NewStream(meta model.Meta, opt Options, name string) (*Stream, error) {
	selected, err := selectChecks(opt.Checks)
	if err != nil {
		return nil, err
	}
	if err := meta.Validate(); err != nil {
		return nil, err
	}
	if len(meta.Connections) == 0 {
		return nil, ErrNoConnections
	}
	return newStream(meta, meta.Connections, meta.Params, opt, selected, name)
}

func decoder(meta model.Meta, opt Options, mtu int) model.Decoder {
	dec := model.Decoder{Parser: roce.Parser{MirrorPort: mirrorPort(opt.MirrorPort)}, MTU: mtu}
	if meta.Mirror != nil {
		dec.Mirror = *meta.Mirror
	}
	dec.Holds = meta.Params.MirrorHolds
	return dec
}

func newStream(meta model.Meta, conns []model.Connection, params model.Params, opt Options, selected map[string]bool, name string) (*Stream, error) {
	if params.MTU == 0 {
		params.MTU = 1024
	}
	skipCounters := ""
	if opt.QP != nil {
		all := len(conns)
		var err error
		if meta, conns, err = onlyQP(meta, conns, *opt.QP); err != nil {
			return nil, err
		}
		if all > 1 {
			skipCounters = fmt.Sprintf("analyzing connection %d alone: NIC counters count all %d connections", *opt.QP, all)
		}
	}
	table := model.NewTable(conns)
	m := newMainPass(table, meta, params, opt, decoder(meta, opt, params.MTU), meta.Mirror != nil)
	m.a.skipCounters = skipCounters
	m.r.Trace.Path = name
	return &Stream{m: m, meta: meta, selected: selected}, nil
}

// onlyQP restricts conns to the one of index qp, and meta's connections
// (unless empty: inferred) and injected events to that connection's.
func onlyQP(meta model.Meta, conns []model.Connection, qp int) (model.Meta, []model.Connection, error) {
	if qp < 0 || qp >= len(conns) {
		if len(conns) == 0 {
			return meta, nil, fmt.Errorf("%w %d: the trace has no connections", ErrQP, qp)
		}
		return meta, nil, fmt.Errorf("%w %d: the trace has %d (0..%d)", ErrQP, qp, len(conns), len(conns)-1)
	}
	if len(meta.Connections) > 0 {
		meta.Connections = conns[qp : qp+1 : qp+1]
	}
	var evs []model.Event
	for _, e := range meta.Events {
		if e.Conn == qp {
			e.Conn = 0 // the index in the restricted table
			evs = append(evs, e)
		}
	}
	if meta.Events != nil {
		meta.Events = evs
		if evs == nil {
			meta.Events = []model.Event{}
		}
	}
	return meta, conns[qp : qp+1 : qp+1], nil
}

// Packet analyzes the next packet of the trace; tp.Index must count the
// trace's packets from 0. It does not allocate in steady state.
func (s *Stream) Packet(tp *trace.Packet) { s.m.packet(tp) }

// Finish returns the report of the packets seen.
func (s *Stream) Finish() *Report {
	r := s.m.r
	r.Trace.Mirrored = s.m.dec.Mirror
	s.m.a.finish(r, s.meta, s.selected)
	return r
}

func mirrorPort(v int) uint16 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return roce.DefaultMirrorPort
	}
	return uint16(v)
}

// detectMirror decides from the first RoCE frame whether the trace carries
// mirror metadata, and reports whether it could decide.
func detectMirror(d *model.Decoder, tp *trace.Packet) bool {
	var pk roce.Packet
	if d.Parser.Parse(tp.Data, tp.OrigLen, &pk) != nil {
		return false
	}
	d.Mirror = pk.LooksMirrored()
	return true
}

func selectChecks(names []string) (map[string]bool, error) {
	sel := map[string]bool{}
	if len(names) == 0 {
		names = report.AllChecks
	}
	for _, n := range names {
		n = strings.TrimSpace(n)
		ok := n == report.CheckRNR
		for _, c := range report.AllChecks {
			ok = ok || c == n
		}
		if !ok {
			return nil, fmt.Errorf("%w %q (want %s, %s)", ErrChecks, n, strings.Join(report.AllChecks, ", "), report.CheckRNR)
		}
		sel[n] = true
	}
	all := true
	for _, c := range report.AllChecks {
		all = all && sel[c]
	}
	if all {
		sel[report.CheckRNR] = true
	}
	return sel, nil
}

// openTrace opens src as a trace of Ethernet frames (as lumina decode: the
// analyzers decode Ethernet frames only); the caller closes rc.
func openTrace(src Source) (rc io.ReadCloser, tr *trace.Reader, err error) {
	if rc, err = src.Open(); err != nil {
		return nil, nil, fmt.Errorf("analyzers: %w", err)
	}
	if tr, err = trace.NewReader(rc); err != nil {
		rc.Close()
		return nil, nil, fmt.Errorf("analyzers: %s: %w", src.Name(), err)
	}
	if lt := tr.LinkType(); lt != trace.LinkTypeEthernet {
		rc.Close()
		return nil, nil, fmt.Errorf("analyzers: %s: link type %v %w", src.Name(), lt, ErrLinkType)
	}
	return rc, tr, nil
}

// pass streams the packets of src to fn, checking ctx every 64Ki packets.
func pass(ctx context.Context, src Source, fn func(*trace.Packet)) error {
	rc, tr, err := openTrace(src)
	if err != nil {
		return err
	}
	defer rc.Close()
	var tp trace.Packet // one variable for the whole pass: &tp escapes
	for n := 0; ; n++ {
		if n&0xFFFF == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		err = tr.ReadPacket(&tp)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("analyzers: %s: %w", src.Name(), err)
		}
		fn(&tp)
	}
}

// mainPass is the state of the analysis pass.
type mainPass struct {
	a       *pipeline
	dec     model.Decoder
	r       *Report
	decided bool
	p       model.Pkt
}

func newMainPass(table *model.Table, meta model.Meta, params model.Params, opt Options, dec model.Decoder, decided bool) *mainPass {
	m := &mainPass{a: newPipeline(table, meta, params, opt), dec: dec, decided: decided,
		r: &Report{Params: params, Connections: table.Connections()}}
	m.dec.Table = table
	m.a.gbn.SetForeign(!dec.Mirror)
	return m
}

// packet handles one frame of the trace. It does not allocate in steady
// state.
func (m *mainPass) packet(tp *trace.Packet) {
	if !m.decided {
		if m.decided = detectMirror(&m.dec, tp); m.decided {
			m.a.gbn.SetForeign(!m.dec.Mirror)
		}
	}
	r := m.r
	r.Trace.Packets++
	if tp.IsMACMirror() {
		if m.a.opt.Checked == nil {
			m.a.integ.AddFrame(tp.Data, -1, tp.Index)
		}
		m.a.pfc.MAC(tp.Data, tp.Index)
		return
	}
	ok := m.dec.Decode(tp, &m.p)
	if m.a.opt.Checked == nil { // the integrity check's state is its own: after Decode, it reads what Decode read
		if seqField, ts, ttl, ok := m.dec.LastMirrorFields(); ok { // setIntegFrame's fields, with no Frame between
			m.a.integ.AddMirrorFields(seqField, ts, ttl, -1, tp.Index)
		} else {
			f := integrity.ParseFrame(tp.Data)
			m.a.integ.AddParsedFrame(&f, -1, tp.Index)
		}
	}
	if !ok {
		return
	}
	m.a.pfc.ObservePriority(&m.p, pfcPriority(&m.dec, m.a.pfc, tp.Data), tp.OrigLen)
	if r.Trace.RoCEPackets == 0 {
		r.Trace.FirstNs = m.p.TimeNs
	}
	r.Trace.LastNs = m.p.TimeNs
	r.Trace.RoCEPackets++
	if m.p.Conn < 0 && m.p.Kind != model.KindCNP {
		r.Trace.Unattributed++
	}
	if m.a.fab != nil && !m.a.fab.copyOf(&m.p) {
		return // a copy at another switch than the observed one: fabric analyses only
	}
	m.a.observe(&m.p)
	if m.a.seq != nil { // after the analyzers: p.Retx is set
		m.a.seq.AddDecoded(tp, &m.p, &m.dec, m.dec.Mirror) // the frame Decode read, parsed if kept
	}
}

// pipeline holds every analyzer of one pass.
type pipeline struct {
	table   *model.Table
	integ   *integrity.Checker
	integOK bool
	gbn     *gbn.Checker
	retx    *retransmission.Tracker
	rnr     *rnr.Analyzer
	cnp     *cnp.Analyzer
	ev      *events.Analyzer
	pfc     *pfc.Analyzer
	flows   *flows.Analyzer
	tally   *counters.Tally
	seq     *report.SeqCollector
	// fab, in a fabric (model.Fabric), picks the copies the
	// per-connection checks read; nil with one switch.
	fab    *fabricView
	params model.Params
	opt    Options
	// skipCounters, when set, is why the counters check is skipped
	// (Options.QP on a trace with other connections).
	skipCounters string
	// reqODP says whether a connection's requester uses ODP memory
	// (model.Params.ODPAt); nil on a run without ODP.
	reqODP func(c model.Conn) bool
}

// timeoutToleranceNs widens the timeout check's bound on both sides
// (Options.TimeoutToleranceNs, at least half the RTT and
// DefaultTimeoutToleranceNs).
func (a *pipeline) timeoutToleranceNs() int64 {
	return max(a.opt.TimeoutToleranceNs, a.params.RTTNs/2, DefaultTimeoutToleranceNs)
}

func newPipeline(t *model.Table, meta model.Meta, params model.Params, opt Options) *pipeline {
	a := &pipeline{table: t, params: params, opt: opt, tally: counters.NewTally()}
	var err error
	if a.integ, err = integrity.NewChecker(opt.Integrity); err != nil {
		a.integ, _ = integrity.NewChecker(integrity.Options{})
	} else {
		a.integOK = true
	}
	inferred := len(meta.Connections) == 0
	var reqODP func(c model.Conn) bool
	if params.ODP {
		reqODP = func(c model.Conn) bool { return params.ODPAt(c.Requester.IP) }
	}
	a.reqODP = reqODP
	// The earliest a transport timer can expire, as the timeout check
	// bounds it (Finish: the tolerance, then the timestamps' uncertainty
	// below the bound): a READ re-sent sooner continues a go-back.
	var minTimeout int64
	if ttr, ok := params.TransportTimeoutNs(); ok {
		minTimeout = max(ttr-a.timeoutToleranceNs()-params.TimestampUncertaintyNs, 1)
	}
	a.gbn = gbn.New(t, gbn.Options{RetryCnt: params.Retries(), CheckStartPSN: !inferred, ODP: params.ODP, RequesterODP: a.reqODP,
		MinTimeoutNs: minTimeout})
	a.retx = retransmission.New(t, retransmission.Options{RetryCnt: params.Retries(), RTTNs: params.RTTNs, MinTimeoutNs: minTimeout,
		AckLatenessNs: params.CNPLatenessNs})
	ro := rnr.Options{UncertaintyNs: params.TimestampUncertaintyNs, RNRRetry: params.RNRRetries(), ODP: params.ODP, RequesterODP: reqODP}
	if params.Timeout != nil && *params.Timeout > 0 {
		ro.TimeoutNs = int64(roce.TransportTimeout(*params.Timeout))
	}
	a.rnr = rnr.New(t, ro)
	co := cnp.Options{NAKTriggers: params.NAKTriggersCNP, ExpectScope: params.CNPScope, UncertaintyNs: params.TimestampUncertaintyNs,
		LatenessNs: params.CNPLatenessNs, LinkBps: int64(params.LinkGbps * 1e9),
		EgressQueues: meta.Switch != nil && meta.Switch.PFCDrops != nil}
	if params.MinTimeBetweenCNPsUs != nil {
		co.Known = true
		co.MinTimeBetweenCNPsNs = int64(*params.MinTimeBetweenCNPsUs * 1000)
	}
	for _, h := range params.Hosts {
		ch := cnp.Host{Name: h.Name, IPs: h.IPs, NAKTriggers: h.NAKTriggersCNP, LinkBps: int64(h.LinkGbps * 1e9)}
		if h.MinTimeBetweenCNPsUs != nil {
			ch.Known, ch.MinTimeBetweenCNPsNs = true, int64(*h.MinTimeBetweenCNPsUs*1000)
		}
		co.Hosts = append(co.Hosts, ch)
	}
	a.cnp = cnp.New(t, co)
	a.ev = events.New(t, events.Options{Events: meta.Events, UncertaintyNs: params.TimestampUncertaintyNs, Holds: params.MirrorHolds})
	a.pfc = pfc.New(t, pfcOptions(meta, t, params))
	a.flows = flows.New(t, flows.Options{Hosts: flowsHosts(meta, t)})
	a.fab = newFabricView(meta, t)
	if !opt.NoPlots {
		a.seq = report.NewSeqCollector(t, mirrorPort(opt.MirrorPort))
	}
	return a
}

func (a *pipeline) observe(p *model.Pkt) {
	a.retx.Observe(p) // first: it marks retransmissions
	a.rnr.Observe(p)  // after retx: p.Retx
	a.gbn.Observe(p)
	a.cnp.Observe(p)
	a.ev.Observe(p)
	a.tally.Observe(p)
	a.flows.Observe(p) // after retx: p.Retx
}

func (a *pipeline) finish(r *Report, meta model.Meta, selected map[string]bool) {
	if a.seq != nil { // graphs for an invalid trace too: they show what is wrong
		r.Plots = a.seq.Plots()
	}
	if r.Trace.Mirrored {
		var v integrity.Verdict
		if a.opt.Checked != nil {
			v = *a.opt.Checked
		} else {
			v = a.integ.Finish(integrityCounters(meta.Switch, meta.Fabric))
		}
		switch {
		case !a.integOK:
			r.Integrity = report.Integrity{Verdict: model.Fail, Reason: "invalid integrity options"}
		case v.Pass:
			r.Integrity = report.Integrity{Verdict: model.Pass}
			if sk := v.Skipped(); len(sk) > 0 {
				r.Integrity.Reason = "skipped: " + strings.Join(sk, ", ")
			}
		default:
			r.Integrity = report.Integrity{Verdict: model.Fail, Reason: v.Check + ": " + v.Reason}
		}
	} else {
		r.Integrity = report.Integrity{Verdict: model.Skip, Reason: "no mirror metadata: a foreign capture"}
	}
	integ := r.Integrity
	r.Checks.Integrity = &integ // every check in one place (docs/analyze.md)
	r.Valid = r.Integrity.Verdict != model.Fail
	if !r.Valid {
		for _, c := range report.AllChecks {
			r.Checks.Skip(c, "integrity check failed: the run is invalid")
		}
		if a.rnr.Applies() {
			r.Checks.Skip(report.CheckRNR, "integrity check failed: the run is invalid")
		}
		return
	}
	g := a.gbn.Finish()
	rt := a.retx.Finish()
	ttr, _ := a.params.TransportTimeoutNs()
	retry := a.params.Retries()
	if retry == 0 {
		retry = -1
	}
	to := timeout.Check(&rt, a.table, timeout.Options{TransportTimeoutNs: ttr, RetryCnt: retry, ToleranceNs: a.timeoutToleranceNs(),
		UncertaintyNs: a.params.TimestampUncertaintyNs, LatenessNs: a.params.TimerLatenessNs, RequesterODP: a.reqODP})
	cn := a.cnp.Finish()
	pf := a.pfc.Finish()
	nics := model.ResolveHostNICs(meta.NICs, r.Connections, a.params.Hosts)
	r.Flows = a.flows.Finish(flows.Inputs{PFC: &pf, NICs: nics})
	var restarts map[int]int
	for _, t := range to.Timeouts {
		if n := len(t.RestartIntervals); n > 0 {
			if restarts == nil {
				restarts = map[int]int{}
			}
			restarts[t.Conn] += n
		}
	}
	ct := counters.Check(nics, counters.Inputs{Table: a.table, GBN: &g, Retrans: &rt, Tally: a.tally,
		PFC: &pf, PFCHosts: pfcHosts(meta, a.table), SwitchDrops: switchPFCDrops(meta), Restarts: restarts})
	rn := a.rnr.Finish(rnr.Inputs{Retrans: &rt, NICs: nics, SkipCounters: a.skipCounters})
	r.Checks = report.Checks{Integrity: &integ, GBN: g, Retransmission: rt, Timeout: to, CNP: cn, Counters: ct, Events: a.ev.Finish(), RNR: rn}
	r.PFC = pf
	if a.fab != nil {
		a.fab.finish(r, a.table)
	}
	nicDiscards(r, nics, a.table, a.tally)
	for _, c := range report.AllChecks {
		if !selected[c] {
			r.Checks.Skip(c, report.NotSelected)
		}
	}
	if a.rnr.Applies() && !selected[report.CheckRNR] {
		r.Checks.Skip(report.CheckRNR, report.NotSelected)
	}
	if a.skipCounters != "" && selected[report.CheckCounters] {
		r.Checks.Skip(report.CheckCounters, a.skipCounters)
	}
	for _, c := range r.Connections {
		if c.Verb == model.VerbMixed && selected[report.CheckGBN] && r.Checks.GBN.Reason == "" {
			r.Checks.GBN.Reason = "connections mixing READ with SEND/WRITE are not checked"
		}
	}
}

// pfcOptions configures the pfc analyzer from the metadata.
func pfcOptions(meta model.Meta, t *model.Table, params model.Params) pfc.Options {
	o := pfc.Options{LinkBps: int64(params.LinkGbps * 1e9), UncertaintyNs: params.TimestampUncertaintyNs, RTTNs: params.RTTNs,
		LatenessNs: params.PauseLatenessNs, SentUncertaintyNs: params.SentUncertaintyNs, DetectionNs: params.PFCDetectionNs, RestorationNs: params.PFCRestorationNs, Hosts: pfcHosts(meta, t)}
	if f := meta.Fabric; f != nil {
		o.Fabric, o.FabricHosts, o.DeadlockNs = f, fabricHosts(meta, t), params.DeadlockNs
		if meta.Switch != nil {
			o.SwitchWatchdog = meta.Switch.Watchdog
		}
		if len(o.Hosts) == 0 {
			o.Hosts = o.FabricHosts
		}
	}
	if len(params.PrioDSCPMap) > 0 {
		var m [64]uint8
		for d := range m {
			m[d] = uint8(params.PriorityOfDSCP(uint8(d)))
		}
		o.DSCPToPriority = &m
	}
	return o
}

// pfcHosts resolves Meta.SwitchPorts: a host of Params.Hosts (a
// many-host test) names its addresses, a role the addresses of that side
// of the connections, another name a NIC's addresses. Hosts are sorted
// by port, then name.
func pfcHosts(meta model.Meta, t *model.Table) []pfc.Host {
	var hs []pfc.Host
	for name, port := range meta.SwitchPorts {
		h := pfc.Host{Name: name, Port: uint16(port)}
		seen := map[netip.Addr]bool{}
		add := func(ip netip.Addr) {
			if ip.IsValid() && !seen[ip] {
				seen[ip] = true
				h.IPs = append(h.IPs, ip)
			}
		}
		switch hp := meta.Params.Host(name); {
		case hp != nil: // a many-host test's host
			for _, ip := range hp.IPs {
				add(ip)
			}
		case name == "requester", name == "responder":
			for _, c := range t.Conns {
				if name == "requester" {
					add(c.Requester.IP)
				} else {
					add(c.Responder.IP)
				}
			}
		default:
			for _, n := range meta.NICs {
				if n.Name == name {
					for _, ip := range n.IPs {
						add(ip)
					}
				}
			}
		}
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Port != hs[j].Port {
			return hs[i].Port < hs[j].Port
		}
		return hs[i].Name < hs[j].Name
	})
	return hs
}

// fabricHosts are the hosts cabled to the switches of Meta.Fabric, by
// port, with their addresses resolved as pfcHosts resolves them.
func fabricHosts(meta model.Meta, t *model.Table) []pfc.Host {
	m := model.Meta{Params: meta.Params, NICs: meta.NICs, SwitchPorts: map[string]uint32{}}
	for _, p := range meta.Fabric.Ports {
		if p.Host != "" {
			m.SwitchPorts[p.Host] = p.Port
		}
	}
	return pfcHosts(m, t)
}

// flowsHosts are the hosts of the flows analysis: pfcHosts, then the
// hosts of Params.Hosts the switch ports do not name (port 0: unknown).
func flowsHosts(meta model.Meta, t *model.Table) []pfc.Host {
	hs := pfcHosts(meta, t)
	for _, h := range meta.Params.Hosts {
		if _, ok := meta.SwitchPorts[h.Name]; !ok {
			hs = append(hs, pfc.Host{Name: h.Name, IPs: h.IPs})
		}
	}
	return hs
}

// integrityCounters are the integrity check's counters from the run
// record: the switch's and dumpers' counters and, in a fabric, each
// logical switch's name and last sequence number.
func integrityCounters(s *model.Switch, f *model.Fabric) integrity.Counters {
	var c integrity.Counters
	if f != nil {
		for _, name := range f.Switches {
			c.Switches = append(c.Switches, integrity.SwitchCounters{Name: name})
		}
	}
	if s == nil {
		return c
	}
	for id, n := range s.LastSeq {
		for len(c.Switches) <= id {
			c.Switches = append(c.Switches, integrity.SwitchCounters{})
		}
		c.Switches[id].LastSeq = integrity.Known(n)
	}
	if s.RoCEReceived != nil {
		c.SwitchRoCEReceived = integrity.Known(*s.RoCEReceived)
	}
	if s.Mirrored != nil {
		c.SwitchMirrored = integrity.Known(*s.Mirrored)
	}
	for _, d := range s.Dumpers {
		dc := integrity.DumperCounters{Name: d.Name}
		if d.Captured != nil {
			dc.Captured = integrity.Known(*d.Captured)
		}
		if d.Dropped != nil {
			dc.Dropped = integrity.Known(*d.Dropped)
		}
		c.Dumpers = append(c.Dumpers, dc)
	}
	return c
}

// switchPFCDrops is meta's model.Switch.PFCDrops, 0 if unknown.
func switchPFCDrops(meta model.Meta) int64 {
	if meta.Switch == nil || meta.Switch.PFCDrops == nil {
		return 0
	}
	return int64(*meta.Switch.PFCDrops)
}
