package collie

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/netlumina/lumina/internal/safefile"
)

// Search algorithms.
const (
	AlgoSA      = "sa"       // simulated annealing with MFS (Collie)
	AlgoSANoMFS = "sa-nomfs" // simulated annealing without MFS
	AlgoRandom  = "random"   // independent random points
)

// ErrLog reports an experiments log that does not belong to this search.
var ErrLog = errors.New("collie: experiments log does not match this search")

// Options configure a search. The zero value (plus Space and Engine) runs
// Collie's SA with the defaults below.
type Options struct {
	// Space is the search space. Default DefaultSpace().
	Space *Space
	// Engine runs experiments. Required.
	Engine Engine
	// Monitor detects anomalies.
	Monitor Monitor
	// Algo is sa (default), sa-nomfs or random.
	Algo string
	// Budget is the number of experiments, MFS probes included. Default 1000.
	Budget int
	// Seed seeds every random choice.
	Seed uint64
	// T0, Tmin, Alpha and N are Algorithm 1's initial temperature, final
	// temperature, decay and iterations per temperature. Defaults 1, 0.05,
	// 0.8, 5: 14 temperatures, 70 experiments per counter.
	T0, Tmin, Alpha float64
	N               int
	// InitPoints is the number of random points that rank the counters.
	// Default 10.
	InitPoints int
	// Counters, when set, are the search targets in order (names; kinds
	// follow from the name: throughput_ratio is a performance counter,
	// everything else diagnostic) instead of the std/mean ranking.
	Counters []string
	// LogPath is the JSONL experiments log. A search whose log exists
	// resumes: the logged experiments are replayed instead of run again.
	// Empty: no log.
	LogPath string
	// AnomaliesPath, when set, is rewritten with the anomalies after each
	// new one and at the end.
	AnomaliesPath string
	// Progress receives one line per anomaly, every 100 experiments, and
	// each experiment that took over a second (with an estimate of the
	// time left). Default: discarded.
	Progress io.Writer
	// Now is the clock timing experiments for Progress. Default time.Now.
	Now func() time.Time
	// OnExperiment, when set, sees every experiment (replayed ones too).
	OnExperiment func(Record)
	// MaxSkips bounds consecutive candidates skipped for matching an MFS
	// before the search restarts from a random point. Default 200.
	MaxSkips int
}

// Record is one line of experiments.jsonl.
type Record struct {
	ID       int      `json:"id"`
	Phase    string   `json:"phase"` // init | search | restart | probe | validate
	Workload Workload `json:"workload"`
	Metrics  *Metrics `json:"metrics,omitempty"`
	Error    string   `json:"error,omitempty"`
	Attempts int      `json:"attempts"`
	Verdict  *Verdict `json:"verdict,omitempty"`
	Counter  string   `json:"counter,omitempty"`
	Temp     float64  `json:"temperature,omitempty"`
	// Anomaly is the id of the anomaly this experiment revealed.
	Anomaly string `json:"anomaly,omitempty"`
}

// Anomaly is one entry of anomalies.json.
type Anomaly struct {
	ID       string   `json:"id"`
	Symptom  string   `json:"symptom"`
	Symptoms []string `json:"symptoms,omitempty"`
	// MFS is the minimal feature set (sa). Without MFS (sa-nomfs, random)
	// it holds the anomaly's signature instead: the named dimensions and
	// MTU of each traffic, and Method says so.
	MFS    MFS    `json:"mfs"`
	Method string `json:"method"` // mfs | signature | incomplete
	// Validated reports whether the reduced point reproduced the symptom.
	Validated         bool      `json:"validated"`
	Example           Workload  `json:"example"`
	Reduced           *Workload `json:"reduced,omitempty"`
	FoundAtExperiment int       `json:"found_at_experiment"`
	// ProbeOf is the anomaly whose MFS probe revealed this one (the probe
	// was anomalous outside that MFS).
	ProbeOf string `json:"probe_of,omitempty"`
	Probes  int    `json:"mfs_probes,omitempty"`
	// Occurrences counts anomalous experiments grouped into it (signature;
	// with MFS: points inside it measured later, when the search could not
	// draw a point outside every MFS).
	Occurrences int `json:"occurrences,omitempty"`
}

// Best is the extreme value one counter reached.
type Best struct {
	Counter    string   `json:"counter"`
	Kind       string   `json:"kind"`
	Value      float64  `json:"value"`
	Experiment int      `json:"experiment"`
	Workload   Workload `json:"workload"`
}

// Result summarises a search.
type Result struct {
	Anomalies   []Anomaly `json:"anomalies"`
	Experiments int       `json:"experiments"`
	Replayed    int       `json:"replayed"`
	Failed      int       `json:"failed"`
	// FirstError is the first failed experiment's error ("" if none).
	FirstError string   `json:"first_error,omitempty"`
	Skipped    int      `json:"skipped"`
	Counters   []string `json:"counters"`
	Best       []Best   `json:"best"`
}

// errBudget unwinds the search when the budget is spent.
var errBudget = errors.New("budget spent")

type searcher struct {
	o      Options
	sp     *Space
	rng    *rand.Rand
	ctx    context.Context
	next   int
	replay []Record
	// ran and ranTime count the experiments run (not replayed) and their
	// total time, for slowProgress's estimate.
	ran     int
	ranTime time.Duration
	logf    *os.File
	logw    *bufio.Writer
	res     Result
	mfs     []MFS
	best    map[Counter]*Best
	// history of measured, non-anomalous experiments for starting points
	history []measured
	counter Counter
	temp    float64
	// symptoms holds the symptoms of every measured workload by key: MFS
	// probes of a workload measured before reuse them.
	symptoms map[string][]string
	// seen holds the non-anomalous measurements by workload key: the
	// annealing revisits them without spending budget.
	seen map[string]measured
}

type measured struct {
	w   Workload
	val map[Counter]float64
	v   Verdict
	ok  bool
	id  int
}

// Search runs a search to its budget. It returns the result also on error
// (a cancelled context, a log mismatch).
func Search(ctx context.Context, o Options) (*Result, error) {
	if o.Engine == nil {
		return nil, errors.New("collie: Options.Engine is nil")
	}
	if o.Space == nil {
		o.Space = DefaultSpace()
	}
	if o.Algo == "" {
		o.Algo = AlgoSA
	}
	if o.Algo != AlgoSA && o.Algo != AlgoSANoMFS && o.Algo != AlgoRandom {
		return nil, fmt.Errorf("collie: unknown algorithm %q (want sa, sa-nomfs, random)", o.Algo)
	}
	if o.Budget == 0 {
		o.Budget = 1000
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.T0, 1)
	def(&o.Tmin, 0.05)
	def(&o.Alpha, 0.8)
	if o.N == 0 {
		o.N = 5
	}
	if o.InitPoints == 0 {
		o.InitPoints = 10
	}
	if o.MaxSkips == 0 {
		o.MaxSkips = 200
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Alpha <= 0 || o.Alpha >= 1 || o.Tmin <= 0 || o.T0 <= o.Tmin {
		return nil, fmt.Errorf("collie: want 0 < alpha < 1 and 0 < tmin < t0")
	}
	s := &searcher{o: o, sp: o.Space, ctx: ctx, rng: rand.New(rand.NewPCG(o.Seed, 0x636f6c6c6965)), best: map[Counter]*Best{}, seen: map[string]measured{},
		symptoms: map[string][]string{}}
	if o.LogPath != "" {
		if err := s.openLog(); err != nil {
			return nil, err
		}
		defer s.closeLog()
	}
	var err error
	switch o.Algo {
	case AlgoRandom:
		err = s.random()
	default:
		err = s.anneal()
	}
	if errors.Is(err, errBudget) {
		err = nil
	}
	if errors.Is(err, ErrLog) {
		return nil, err // a refused resume: leave every file as it was
	}
	s.finish()
	if werr := s.writeAnomalies(); werr != nil && err == nil {
		err = werr
	}
	fmt.Fprintf(o.Progress, "collie: done: %d experiments (%d replayed, %d failed), %d anomalies\n",
		s.res.Experiments, s.res.Replayed, s.res.Failed, len(s.res.Anomalies))
	return &s.res, err
}

func (s *searcher) openLog() error {
	if err := os.MkdirAll(filepath.Dir(s.o.LogPath), 0o755); err != nil {
		return fmt.Errorf("collie: %w", err)
	}
	data, err := safefile.ReadFile(s.o.LogPath, safefile.MaxRecordSize, safefile.NoFollow) // appended to below
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("collie: %w", err)
	}
	// A killed search may have left a partial last line: drop it.
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		data = data[:i+1]
		if err := safefile.WriteFile(s.o.LogPath, data, 0o644); err != nil {
			return fmt.Errorf("collie: %w", err)
		}
	}
	for n, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%w: %s line %d: %w", ErrLog, s.o.LogPath, n+1, err)
		}
		s.replay = append(s.replay, r)
	}
	f, err := os.OpenFile(s.o.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("collie: %w", err)
	}
	s.logf, s.logw = f, bufio.NewWriter(f)
	return nil
}

func (s *searcher) closeLog() {
	s.logw.Flush()
	s.logf.Close()
}

// measure runs (or replays) one experiment.
func (s *searcher) measure(w Workload, phase string) (measured, *Record, error) {
	if s.next >= s.o.Budget {
		return measured{}, nil, errBudget
	}
	if err := s.ctx.Err(); err != nil {
		return measured{}, nil, err
	}
	id := s.next
	s.next++
	var rec Record
	if id < len(s.replay) {
		rec = s.replay[id]
		if rec.ID != id || rec.Phase != phase || !rec.Workload.Equal(w) {
			return measured{}, nil, fmt.Errorf("%w: experiment %d is logged as %s %s, the search wants %s %s (a different seed, space, algorithm or engine?)",
				ErrLog, id, rec.Phase, rec.Workload.Key(), phase, w.Key())
		}
		s.res.Replayed++
	} else {
		rec = Record{ID: id, Phase: phase, Workload: w}
		start := s.now()
		defer func() { s.slowProgress(id, s.now().Sub(start)) }()
		for attempt := 1; attempt <= 2; attempt++ {
			rec.Attempts = attempt
			met, err := s.o.Engine.Run(s.ctx, id, w)
			if err == nil {
				rec.Metrics, rec.Error = met, ""
				break
			}
			if s.ctx.Err() != nil {
				return measured{}, nil, s.ctx.Err()
			}
			rec.Error = err.Error()
		}
	}
	s.res.Experiments++
	m := measured{w: w, id: id}
	if rec.Metrics != nil {
		v := s.o.Monitor.Check(w, rec.Metrics)
		rec.Verdict = &v
		m.v, m.ok = v, true
		s.symptoms[w.Key()] = v.Symptoms
		m.val = counterValues(rec.Metrics, v, s.o.Monitor.LineGbps > 0 || s.o.Monitor.LineMpps > 0)
		for c, x := range m.val {
			b := s.best[c]
			better := b == nil || (c.Kind == Diagnostic && x > b.Value) || (c.Kind == Performance && x < b.Value)
			if better {
				s.best[c] = &Best{Counter: c.Name, Kind: c.Kind.String(), Value: x, Experiment: id, Workload: w.Clone()}
			}
		}
	} else {
		s.res.Failed++
		if s.res.FirstError == "" {
			s.res.FirstError = rec.Error
		}
		fmt.Fprintf(s.o.Progress, "collie: experiment %d failed: %s\n", id, rec.Error)
	}
	if s.counter.Name != "" && phase == "search" {
		rec.Counter, rec.Temp = s.counter.Name, s.temp
	}
	return m, &rec, nil
}

func (s *searcher) now() time.Time {
	if s.o.Now != nil {
		return s.o.Now()
	}
	return time.Now()
}

// slowProgress reports an experiment that took over a second, with the
// time the rest of the budget would take at the mean time of the
// experiments run so far (replayed ones excluded).
func (s *searcher) slowProgress(id int, d time.Duration) {
	s.ranTime += d
	s.ran++
	if d <= time.Second {
		return
	}
	left := time.Duration(0)
	if rest := s.o.Budget - s.next; rest > 0 {
		left = s.ranTime / time.Duration(s.ran) * time.Duration(rest)
	}
	fmt.Fprintf(s.o.Progress, "collie: experiment %d/%d took %s; about %s left\n",
		id+1, s.o.Budget, d.Round(time.Millisecond), left.Round(time.Second))
}

// commit writes the record (after any anomaly id is known).
func (s *searcher) commit(rec *Record) error {
	if s.logw != nil && rec.ID >= len(s.replay) {
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		s.logw.Write(append(b, '\n'))
		if err := s.logw.Flush(); err != nil {
			return fmt.Errorf("collie: log: %w", err)
		}
	}
	if s.o.OnExperiment != nil {
		s.o.OnExperiment(*rec)
	}
	if s.res.Experiments%100 == 0 {
		fmt.Fprintf(s.o.Progress, "collie: %d/%d experiments, %d anomalies, counter %s, T=%.3g\n",
			s.res.Experiments, s.o.Budget, len(s.res.Anomalies), s.counter.Name, s.temp)
	}
	return nil
}

// eval measures, handles an anomaly, and commits.
func (s *searcher) eval(w Workload, phase string) (measured, error) {
	m, rec, err := s.measure(w, phase)
	if err != nil {
		return m, err
	}
	if m.ok && m.v.Anomalous() {
		id, herr := s.anomaly(m, rec)
		if rec.ID >= 0 { // not yet committed by the MFS path
			rec.Anomaly = id
			if cerr := s.commit(rec); cerr != nil {
				return m, cerr
			}
		}
		if herr != nil {
			return m, herr
		}
		return m, nil
	}
	if m.ok {
		s.history = append(s.history, m)
		s.seen[w.Key()] = m
	}
	return m, s.commit(rec)
}

// anomaly records an anomaly; with MFS it runs the MFS algorithm. The
// returned id is "" for an anomaly grouped into an earlier one.
func (s *searcher) anomaly(m measured, rec *Record) (string, error) {
	sym := m.v.Symptoms
	primary := sym[0]
	if s.o.Algo != AlgoSA {
		sig := signature(m.w)
		key := strings.Join(sym, ",") + " " + sig.String()
		for i := range s.res.Anomalies {
			a := &s.res.Anomalies[i]
			if strings.Join(a.Symptoms, ",")+" "+a.MFS.String() == key {
				a.Occurrences++
				return "", nil
			}
		}
		a := Anomaly{ID: fmt.Sprintf("A%d", len(s.res.Anomalies)+1), Symptom: primary, Symptoms: sym, MFS: sig,
			Method: "signature", Example: m.w.Clone(), FoundAtExperiment: m.id, Occurrences: 1}
		s.res.Anomalies = append(s.res.Anomalies, a)
		fmt.Fprintf(s.o.Progress, "collie: anomaly %s (%s) at experiment %d: %s\n", a.ID, primary, m.id, sig)
		return a.ID, s.writeAnomalies()
	}
	// A point inside a known MFS with its symptom (a restart drawn there
	// after MaxSkips tries, when the MFS cover most of the space) is that
	// anomaly again.
	for i := range s.res.Anomalies {
		a := &s.res.Anomalies[i]
		if a.Method == "mfs" && a.MFS.Match(m.w) && sharesSymptom(sym, a.Symptoms) {
			a.Occurrences++
			return a.ID, nil
		}
	}
	id, witnesses, err := s.withMFS(m, rec, "")
	// An MFS probe the monitor flags as anomalous and that lies outside
	// every MFS (another symptom, or a value the corner check dropped) is
	// an anomaly the search has measured: it gets its own MFS, in the order
	// the probes ran, before the search goes on.
	for len(witnesses) > 0 && err == nil {
		x := witnesses[0]
		witnesses = witnesses[1:]
		if MatchAny(s.mfs, x.m.w) {
			continue
		}
		var more []witness
		_, more, err = s.withMFS(x.m, nil, x.of)
		witnesses = append(witnesses, more...)
	}
	return id, err
}

// sharesSymptom reports whether a and b have a symptom in common.
func sharesSymptom(a, b []string) bool {
	return slices.ContainsFunc(a, func(x string) bool { return slices.Contains(b, x) })
}

// witness is an anomalous MFS probe of anomaly of.
type witness struct {
	m  measured
	of string
}

// withMFS records an anomaly and builds its MFS. rec is the record of the
// revealing experiment, committed here with the anomaly id; nil when that
// experiment was a probe of anomaly probeOf (its record is in the log
// already). It returns the anomalous probes outside the new MFS.
func (s *searcher) withMFS(m measured, rec *Record, probeOf string) (string, []witness, error) {
	sym := m.v.Symptoms
	primary := sym[0]
	a := Anomaly{ID: fmt.Sprintf("A%d", len(s.res.Anomalies)+1), Symptom: primary, Symptoms: sym,
		Example: m.w.Clone(), FoundAtExperiment: m.id, ProbeOf: probeOf, Method: "mfs"}
	at := ""
	if probeOf != "" {
		at = ", a probe of " + probeOf
	}
	fmt.Fprintf(s.o.Progress, "collie: anomaly %s (%s) at experiment %d%s; building its MFS\n", a.ID, primary, m.id, at)
	if rec != nil {
		// The record of the anomalous experiment precedes its probes in the log.
		rec.Anomaly = a.ID
		if err := s.commit(rec); err != nil {
			return a.ID, nil, err
		}
		rec.ID = -1 // committed: eval must not write it again
	}
	measuredProbes := 0
	var anomalous []measured
	probe := func(p Workload) (bool, error) {
		if known, ok := s.symptoms[p.Key()]; ok {
			// Measured before (a search point or an earlier probe): reuse it.
			return sharesSymptom(known, sym), nil
		}
		measuredProbes++
		pm, prec, err := s.measure(p, "probe")
		if err != nil {
			return false, err
		}
		if err := s.commit(prec); err != nil {
			return false, err
		}
		if !pm.ok {
			return false, nil
		}
		if pm.v.Anomalous() {
			anomalous = append(anomalous, pm)
		}
		return sharesSymptom(pm.v.Symptoms, sym), nil
	}
	r, err := s.sp.BuildMFS(m.w, probe)
	a.Probes = measuredProbes
	if err != nil {
		a.Method = "incomplete"
		a.MFS = nil
		s.res.Anomalies = append(s.res.Anomalies, a)
		return a.ID, nil, err
	}
	a.MFS, a.Validated = r.MFS, r.Validated
	red := r.Reduced
	a.Reduced = &red
	s.mfs = append(s.mfs, r.MFS)
	s.res.Anomalies = append(s.res.Anomalies, a)
	fmt.Fprintf(s.o.Progress, "collie: anomaly %s MFS (%d probes, validated=%v): %s\n", a.ID, r.Probes, r.Validated, r.MFS)
	// An MFS that did not validate was narrowed to the point's named values
	// for precision, not because its probes showed another anomaly: only
	// probes with another symptom are witnesses then.
	var out []witness
	for _, pm := range anomalous {
		if !r.MFS.Match(pm.w) && (r.Validated || !sharesSymptom(pm.v.Symptoms, sym)) {
			out = append(out, witness{pm, a.ID})
		}
	}
	return a.ID, out, s.writeAnomalies()
}

// signature is the grouping key of anomalies found without MFS.
func signature(w Workload) MFS {
	out := make(MFS, len(w.Traffics))
	for i, t := range w.Traffics {
		out[i] = Conds{"direction": Values(t.Direction), "memory": Values(t.Memory), "qp_type": Values(t.QPType),
			"opcode": Values(t.Opcode), "mtu": IntValues(t.MTU)}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].keyString() < out[j].keyString() })
	return out
}

func (c Conds) keyString() string { return MFS{c}.String() }

// fresh draws a random point outside every MFS.
func (s *searcher) fresh() Workload {
	for i := 0; ; i++ {
		w := s.sp.Random(s.rng)
		if s.o.Algo != AlgoSA || !MatchAny(s.mfs, w) || i >= s.o.MaxSkips {
			return w
		}
		s.res.Skipped++
	}
}

func (s *searcher) random() error {
	for {
		if _, err := s.eval(s.fresh(), "search"); err != nil {
			return err
		}
	}
}

func (s *searcher) anneal() error {
	var readings []map[Counter]float64
	for range s.o.InitPoints {
		m, err := s.eval(s.fresh(), "init")
		if err != nil {
			return err
		}
		if m.ok {
			readings = append(readings, m.val)
		}
	}
	var counters []Counter
	if len(s.o.Counters) > 0 {
		for _, n := range s.o.Counters {
			k := Diagnostic
			if n == CounterThroughputRatio {
				k = Performance
			}
			counters = append(counters, Counter{n, k})
		}
	} else {
		counters = searchTargets(RankCounters(readings))
	}
	if len(counters) == 0 {
		counters = []Counter{{CounterPauseRatio, Diagnostic}}
	}
	for _, c := range counters {
		s.res.Counters = append(s.res.Counters, c.Name)
	}
	fmt.Fprintf(s.o.Progress, "collie: counters by std/mean: %s\n", strings.Join(s.res.Counters, ", "))
	for ci := 0; ; ci = (ci + 1) % len(counters) {
		s.counter = counters[ci]
		cur, err := s.start()
		if err != nil {
			return err
		}
		skips := 0
		for s.temp = s.o.T0; s.temp > s.o.Tmin; s.temp *= s.o.Alpha {
			for i := 0; i < s.o.N; i++ {
				cand := s.sp.Mutate(s.rng, cur.w)
				if s.o.Algo == AlgoSA && MatchAny(s.mfs, cand) {
					s.res.Skipped++
					if skips++; skips >= s.o.MaxSkips {
						skips = 0
						if cur, err = s.restart(); err != nil {
							return err
						}
					}
					continue
				}
				m, known := s.seen[cand.Key()]
				if known {
					// Measured before: decide again without spending budget.
					if skips++; skips >= s.o.MaxSkips {
						skips = 0
						if cur, err = s.restart(); err != nil {
							return err
						}
					}
				} else {
					skips = 0
					if m, err = s.eval(cand, "search"); err != nil {
						return err
					}
				}
				if !m.ok {
					continue
				}
				a, b := cur.val[s.counter], m.val[s.counter]
				dE := Energy(s.counter.Kind, a, b)
				if dE < 0 || s.rng.Float64() < math.Exp(-dE/s.temp) {
					cur = m
				}
				if m.v.Anomalous() {
					if cur, err = s.restart(); err != nil {
						return err
					}
				}
			}
		}
	}
}

// searchTargets keeps the diagnostic counters of the engine when it
// reports any (§7.2: the search drives the vendor's diagnostic counters in
// their rank order); the monitor's own metrics, throughput_ratio and
// pause_duration_ratio, are the targets only for engines without them.
func searchTargets(ranked []Counter) []Counter {
	var diag []Counter
	for _, c := range ranked {
		if c.Name != CounterThroughputRatio && c.Name != CounterPauseRatio {
			diag = append(diag, c)
		}
	}
	if len(diag) == 0 {
		return ranked
	}
	return diag
}

// start picks the starting point for the current counter: the best
// non-anomalous point measured so far outside every MFS, else a fresh one.
func (s *searcher) start() (measured, error) {
	var best *measured
	for i := range s.history {
		h := &s.history[i]
		if s.o.Algo == AlgoSA && MatchAny(s.mfs, h.w) {
			continue
		}
		x, ok := h.val[s.counter]
		if !ok {
			continue
		}
		if best == nil {
			best = h
			continue
		}
		y := best.val[s.counter]
		if (s.counter.Kind == Diagnostic && x > y) || (s.counter.Kind == Performance && x < y) {
			best = h
		}
	}
	if best != nil {
		return *best, nil
	}
	return s.restart()
}

// restart measures random points until one is a usable, non-anomalous start.
func (s *searcher) restart() (measured, error) {
	for {
		m, err := s.eval(s.fresh(), "restart")
		if err != nil {
			return m, err
		}
		if m.ok && !m.v.Anomalous() {
			return m, nil
		}
	}
}

func (s *searcher) finish() {
	var bs []Best
	for _, b := range s.best {
		bs = append(bs, *b)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].Counter < bs[j].Counter })
	s.res.Best = bs
}

func (s *searcher) writeAnomalies() error {
	if s.o.AnomaliesPath == "" {
		return nil
	}
	as := s.res.Anomalies
	if as == nil {
		as = []Anomaly{}
	}
	b, err := json.MarshalIndent(as, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(s.o.AnomaliesPath, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("collie: %w", err)
	}
	return nil
}

// ReadAnomalies reads an anomalies.json file.
func ReadAnomalies(path string) ([]Anomaly, error) {
	b, err := safefile.ReadFile(path, safefile.MaxRecordSize, safefile.Options{})
	if err != nil {
		return nil, fmt.Errorf("collie: %w", err)
	}
	var as []Anomaly
	if err := json.Unmarshal(b, &as); err != nil {
		return nil, fmt.Errorf("collie: %s: %w", path, err)
	}
	return as, nil
}
