package collie

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/internal/safefile"
)

// Sentinel errors of the package.
var (
	// ErrSpace reports an invalid search-space file.
	ErrSpace = errors.New("collie: invalid search space")
	// ErrWorkload reports a workload that violates the space or its constraints.
	ErrWorkload = errors.New("collie: invalid workload")
)

// Direction values of a traffic.
const (
	Uni      = "uni"      // host A → host B
	Bi       = "bi"       // host A → host B and host B → host A
	Loopback = "loopback" // host B → host B (the host that receives uni traffic)
)

// Event is one injected packet event of the lumina engine's extended space.
// PSN -1 means "no event in this slot".
type Event struct {
	Msg  int    `json:"msg"`
	PSN  int    `json:"psn"`
	Iter int    `json:"iter"`
	Type string `json:"type"`
}

// Traffic is one traffic of a workload: a set of QPs with one setting of
// every search dimension.
type Traffic struct {
	Direction    string  `json:"direction"`
	Memory       string  `json:"memory"`
	NumMRs       int64   `json:"num_mrs"`
	MRSize       int64   `json:"mr_size"`
	QPType       string  `json:"qp_type"`
	Opcode       string  `json:"opcode"`
	NumQPs       int64   `json:"num_qps"`
	MTU          int64   `json:"mtu"`
	WQDepth      int64   `json:"wq_depth"`
	WQEBatch     int64   `json:"wqe_batch"`
	SGEPerWQE    int64   `json:"sge_per_wqe"`
	MessageSizes []int64 `json:"message_sizes"`
	Events       []Event `json:"events,omitempty"`
}

// Workload is one point of the search space: the traffics run together.
type Workload struct {
	Traffics []Traffic `json:"traffics"`
}

// Clone returns a deep copy.
func (w Workload) Clone() Workload {
	out := Workload{Traffics: make([]Traffic, len(w.Traffics))}
	for i, t := range w.Traffics {
		out.Traffics[i] = t.clone()
	}
	return out
}

func (t Traffic) clone() Traffic {
	t.MessageSizes = slices.Clone(t.MessageSizes)
	t.Events = slices.Clone(t.Events)
	return t
}

// Equal reports whether two workloads are identical.
func (w Workload) Equal(o Workload) bool { return w.Key() == o.Key() }

// Key is a canonical string of the workload (stable across runs).
func (w Workload) Key() string {
	var b strings.Builder
	for i, t := range w.Traffics {
		if i > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "%s/%s/%d/%d/%s/%s/%d/%d/%d/%d/%d/%v/%v", t.Direction, t.Memory, t.NumMRs, t.MRSize,
			t.QPType, t.Opcode, t.NumQPs, t.MTU, t.WQDepth, t.WQEBatch, t.SGEPerWQE, t.MessageSizes, t.Events)
	}
	return b.String()
}

// MaxMsg and MinMsg return the largest and smallest message size.
func (t *Traffic) MaxMsg() int64 { return slices.Max(t.MessageSizes) }

// MinMsg returns the smallest message size.
func (t *Traffic) MinMsg() int64 { return slices.Min(t.MessageSizes) }

// IntRange is a numeric dimension: the closed range [Min, Max] discretised
// into levels (powers of two between them, plus Min and Max), or the explicit
// Values when given.
type IntRange struct {
	Min    int64   `yaml:"min" json:"min"`
	Max    int64   `yaml:"max" json:"max"`
	Values []int64 `yaml:"values,omitempty" json:"values,omitempty"`
}

// numDims are a traffic's numeric dimensions: each one's field and the
// space's range for it.
var numDims = map[string]struct {
	field func(*Traffic) *int64
	rng   func(*Space) IntRange
}{
	"mtu":         {func(t *Traffic) *int64 { return &t.MTU }, func(s *Space) IntRange { return s.MTU }},
	"num_qps":     {func(t *Traffic) *int64 { return &t.NumQPs }, func(s *Space) IntRange { return s.NumQPs }},
	"num_mrs":     {func(t *Traffic) *int64 { return &t.NumMRs }, func(s *Space) IntRange { return s.NumMRs }},
	"mr_size":     {func(t *Traffic) *int64 { return &t.MRSize }, func(s *Space) IntRange { return s.MRSize }},
	"wq_depth":    {func(t *Traffic) *int64 { return &t.WQDepth }, func(s *Space) IntRange { return s.WQDepth }},
	"wqe_batch":   {func(t *Traffic) *int64 { return &t.WQEBatch }, func(s *Space) IntRange { return s.WQEBatch }},
	"sge_per_wqe": {func(t *Traffic) *int64 { return &t.SGEPerWQE }, func(s *Space) IntRange { return s.SGEPerWQE }},
}

// Levels returns the discrete values draws and mutations use, ascending.
func (r IntRange) Levels() []int64 {
	if len(r.Values) > 0 {
		v := slices.Clone(r.Values)
		slices.Sort(v)
		return slices.Compact(v)
	}
	out := []int64{r.Min}
	for p := int64(1); p < r.Max && p > 0; p *= 2 {
		if p > r.Min {
			out = append(out, p)
		}
	}
	if r.Max > r.Min {
		out = append(out, r.Max)
	}
	return out
}

func (r IntRange) lo() int64 { return slices.Min(r.Levels()) }
func (r IntRange) hi() int64 { return slices.Max(r.Levels()) }

// Contains reports whether v is within the range (or one of the Values).
func (r IntRange) Contains(v int64) bool {
	if len(r.Values) > 0 {
		return slices.Contains(r.Values, v)
	}
	return v >= r.Min && v <= r.Max
}

// MessageSpace describes the request vector (§4 dimension 4).
type MessageSpace struct {
	// Min and Max bound a message size. Default 64 B .. 4 MiB.
	Min int64 `yaml:"min" json:"min"`
	Max int64 `yaml:"max" json:"max"`
	// MaxLen is n, the longest request vector: the paper sets it to the
	// number of processing units times pipeline stages. Default 8.
	MaxLen int `yaml:"max_len" json:"max_len"`
	// Burst is the NIC's burst size; with the MTUs it forms the region
	// boundaries sizes are discretised on. Default 16384.
	Burst int64 `yaml:"burst" json:"burst"`
}

// EventSpace extends traffics with injection events (lumina engine only).
type EventSpace struct {
	// Slots is the number of event slots per traffic. Default 0 (no events).
	Slots int `yaml:"slots" json:"slots"`
	// Messages is the number of messages per QP the lumina engine sends.
	// Default 4.
	Messages int `yaml:"messages" json:"messages"`
	// PSNs are the candidate packet indexes within a message. Default all
	// packets of the (largest) message.
	PSNs []int `yaml:"psns" json:"psns,omitempty"`
	// Iters are the candidate transmission rounds. Default [1, 2].
	Iters []int `yaml:"iters" json:"iters,omitempty"`
	// Types are the candidate event types. Default [drop].
	Types []string `yaml:"types" json:"types,omitempty"`
}

// Space is the search space. Load or Parse it from YAML; every field has a
// default (the paper's scale), so an empty file is the full space.
type Space struct {
	// MaxTraffics is the most traffics in a workload. Default 2.
	MaxTraffics int `yaml:"max_traffics" json:"max_traffics"`
	// Directions, default [uni, bi, loopback].
	Directions []string `yaml:"directions" json:"directions"`
	// Memory is the host-topology dimension, default [dram-local,
	// dram-remote, gpu].
	Memory []string `yaml:"memory" json:"memory"`
	// QPTypes, default [RC, UC, UD].
	QPTypes []string `yaml:"qp_types" json:"qp_types"`
	// Opcodes, default [WRITE, READ, SEND] (UC: no READ; UD: SEND only).
	Opcodes []string `yaml:"opcodes" json:"opcodes"`
	// MTU, default values [1024, 2048, 4096].
	MTU IntRange `yaml:"mtu" json:"mtu"`
	// NumQPs per traffic, default 1..20000.
	NumQPs IntRange `yaml:"num_qps" json:"num_qps"`
	// NumMRs per traffic and side, default 1..200000.
	NumMRs IntRange `yaml:"num_mrs" json:"num_mrs"`
	// MRSize in bytes, default 4 KiB .. 4 MiB.
	MRSize IntRange `yaml:"mr_size" json:"mr_size"`
	// WQDepth, default 1..8192.
	WQDepth IntRange `yaml:"wq_depth" json:"wq_depth"`
	// WQEBatch (WQEs per doorbell), default 1..128. Always ≤ wq_depth.
	WQEBatch IntRange `yaml:"wqe_batch" json:"wqe_batch"`
	// SGEPerWQE, default 1..16.
	SGEPerWQE IntRange `yaml:"sge_per_wqe" json:"sge_per_wqe"`
	// MessageSizes is the request vector.
	MessageSizes MessageSpace `yaml:"message_sizes" json:"message_sizes"`
	// MaxRegisteredBytes caps num_mrs × mr_size per traffic (pinned
	// memory). Default 256 GiB.
	MaxRegisteredBytes int64 `yaml:"max_registered_bytes" json:"max_registered_bytes"`
	// Events, for the lumina engine.
	Events EventSpace `yaml:"events" json:"events"`
}

// DefaultSpace returns the paper-scale space.
func DefaultSpace() *Space {
	s := &Space{}
	s.setDefaults()
	return s
}

func (s *Space) setDefaults() {
	if s.MaxTraffics == 0 {
		s.MaxTraffics = 2
	}
	def := func(v *[]string, d ...string) {
		if len(*v) == 0 {
			*v = d
		}
	}
	def(&s.Directions, Uni, Bi, Loopback)
	def(&s.Memory, "dram-local", "dram-remote", "gpu")
	def(&s.QPTypes, "RC", "UC", "UD")
	def(&s.Opcodes, "WRITE", "READ", "SEND")
	for i := range s.QPTypes {
		s.QPTypes[i] = strings.ToUpper(s.QPTypes[i])
	}
	for i := range s.Opcodes {
		s.Opcodes[i] = strings.ToUpper(s.Opcodes[i])
	}
	rng := func(r *IntRange, lo, hi int64) {
		if len(r.Values) == 0 && r.Min == 0 && r.Max == 0 {
			r.Min, r.Max = lo, hi
		}
		if len(r.Values) == 0 && r.Max == 0 {
			r.Max = hi
		}
		if len(r.Values) == 0 && r.Min == 0 {
			r.Min = lo
		}
	}
	if len(s.MTU.Values) == 0 && s.MTU.Min == 0 && s.MTU.Max == 0 {
		s.MTU.Values = []int64{1024, 2048, 4096}
	}
	rng(&s.NumQPs, 1, 20000)
	rng(&s.NumMRs, 1, 200000)
	rng(&s.MRSize, 4096, 4<<20)
	rng(&s.WQDepth, 1, 8192)
	rng(&s.WQEBatch, 1, 128)
	rng(&s.SGEPerWQE, 1, 16)
	m := &s.MessageSizes
	if m.Min == 0 {
		m.Min = 64
	}
	if m.Max == 0 {
		m.Max = 4 << 20
	}
	if m.MaxLen == 0 {
		m.MaxLen = 8
	}
	if m.Burst == 0 {
		m.Burst = 16384
	}
	if s.MaxRegisteredBytes == 0 {
		s.MaxRegisteredBytes = 256 << 30
	}
	e := &s.Events
	if e.Slots > 0 {
		if e.Messages == 0 {
			e.Messages = 4
		}
		if len(e.Iters) == 0 {
			e.Iters = []int{1, 2}
		}
		if len(e.Types) == 0 {
			e.Types = []string{"drop"}
		}
		if len(e.PSNs) == 0 {
			n := int((m.Max + s.MTU.lo() - 1) / s.MTU.lo())
			for i := 0; i < n && i < 64; i++ {
				e.PSNs = append(e.PSNs, i)
			}
		}
	}
}

func (s *Space) validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if s.MaxTraffics < 1 || s.MaxTraffics > 8 {
		bad("max_traffics %d: want 1..8", s.MaxTraffics)
	}
	for _, d := range s.Directions {
		if d != Uni && d != Bi && d != Loopback {
			bad("directions: unknown %q (want uni, bi, loopback)", d)
		}
	}
	for _, q := range s.QPTypes {
		if q != "RC" && q != "UC" && q != "UD" {
			bad("qp_types: unknown %q (want RC, UC, UD)", q)
		}
	}
	for _, o := range s.Opcodes {
		if o != "WRITE" && o != "READ" && o != "SEND" {
			bad("opcodes: unknown %q (want WRITE, READ, SEND)", o)
		}
	}
	if len(s.Memory) == 0 {
		bad("memory: empty")
	}
	for _, r := range []struct {
		name   string
		r      IntRange
		lo, hi int64
	}{{"mtu", s.MTU, 256, 4096}, {"num_qps", s.NumQPs, 1, 20000}, {"num_mrs", s.NumMRs, 1, 200000},
		{"mr_size", s.MRSize, 1, 1 << 40}, {"wq_depth", s.WQDepth, 1, 1 << 16}, {"wqe_batch", s.WQEBatch, 1, 1 << 12},
		{"sge_per_wqe", s.SGEPerWQE, 1, 64}} {
		lv := r.r.Levels()
		if r.r.Min > r.r.Max && len(r.r.Values) == 0 {
			bad("%s: min %d > max %d", r.name, r.r.Min, r.r.Max)
		} else if lv[0] < r.lo || lv[len(lv)-1] > r.hi {
			bad("%s: values must be within %d..%d", r.name, r.lo, r.hi)
		}
	}
	m := s.MessageSizes
	if m.Min < 1 || m.Max < m.Min {
		bad("message_sizes: bad range %d..%d", m.Min, m.Max)
	}
	if m.MaxLen < 1 || m.MaxLen > 64 {
		bad("message_sizes.max_len %d: want 1..64", m.MaxLen)
	}
	if m.Min >= 1 && m.Min > s.MRSize.hi() {
		bad("message_sizes minimum %d exceeds the largest mr_size %d", m.Min, s.MRSize.hi())
	} else if m.Min >= 1 && len(errs) == 0 {
		// The smallest registration any workload needs: the fewest MRs of
		// the smallest size that holds the smallest message.
		if need := s.NumMRs.lo() * ceilLevel(s.MRSize.Levels(), m.Min); need > s.MaxRegisteredBytes {
			bad("max_registered_bytes %d is below the smallest registration a workload needs (%d MRs × %d bytes)",
				s.MaxRegisteredBytes, s.NumMRs.lo(), ceilLevel(s.MRSize.Levels(), m.Min))
		}
	}
	if s.WQEBatch.lo() > s.WQDepth.hi() {
		bad("wqe_batch minimum %d exceeds the largest wq_depth %d", s.WQEBatch.lo(), s.WQDepth.hi())
	}
	if !s.hasValidTransport() {
		bad("no valid qp_type/opcode combination (UC: no READ; UD: SEND only)")
	}
	if slices.Equal(s.QPTypes, []string{"UD"}) && m.Min > s.MTU.hi() {
		bad("UD only, but every message size exceeds the MTU")
	}
	e := s.Events
	if e.Slots < 0 || e.Slots > 16 {
		bad("events.slots %d: want 0..16", e.Slots)
	}
	if e.Slots > 0 {
		if e.Messages < 1 {
			bad("events.messages %d: want ≥ 1", e.Messages)
		}
		for _, t := range e.Types {
			if t != "drop" && t != "ecn" && t != "corrupt" {
				bad("events.types: unknown %q (want drop, ecn, corrupt)", t)
			}
		}
		for _, it := range e.Iters {
			if it < 1 {
				bad("events.iters: %d < 1", it)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrSpace, strings.Join(errs, "; "))
	}
	return nil
}

func (s *Space) hasValidTransport() bool {
	for _, q := range s.QPTypes {
		if len(s.opcodesFor(q)) > 0 {
			return true
		}
	}
	return false
}

// opcodesFor returns the space's opcodes valid for a QP type.
func (s *Space) opcodesFor(qp string) []string {
	var out []string
	for _, o := range s.Opcodes {
		if opcodeValid(qp, o) {
			out = append(out, o)
		}
	}
	return out
}

func opcodeValid(qp, op string) bool {
	switch qp {
	case "UD":
		return op == "SEND"
	case "UC":
		return op == "WRITE" || op == "SEND"
	}
	return true
}

// ParseSpace reads a space from YAML. Unknown keys are errors.
func ParseSpace(data []byte) (*Space, error) {
	s := &Space{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %w", ErrSpace, err)
	}
	s.setDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadSpace reads a space file.
func LoadSpace(path string) (*Space, error) {
	data, err := safefile.ReadFile(path, safefile.MaxYAMLSize, safefile.Options{})
	if err != nil {
		return nil, fmt.Errorf("collie: %w", err)
	}
	s, err := ParseSpace(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// msgLevels returns the discrete message sizes: powers of two between Min
// and Max plus Min and Max. Every MTU and the burst size are powers of two,
// so the levels fall on the MTU/burst region boundaries of §4.
func (s *Space) msgLevels() []int64 {
	return IntRange{Min: s.MessageSizes.Min, Max: s.MessageSizes.Max}.Levels()
}

// packets returns the number of packets of a message at an MTU.
func packets(size, mtu int64) int64 {
	if size <= 0 {
		return 1
	}
	return (size + mtu - 1) / mtu
}

// Validate checks a workload against the space and its constraints.
func (s *Space) Validate(w Workload) error {
	if len(w.Traffics) < 1 || len(w.Traffics) > s.MaxTraffics {
		return fmt.Errorf("%w: %d traffics (want 1..%d)", ErrWorkload, len(w.Traffics), s.MaxTraffics)
	}
	for i := range w.Traffics {
		if err := s.validateTraffic(&w.Traffics[i]); err != nil {
			return fmt.Errorf("%w: traffic %d: %w", ErrWorkload, i, err)
		}
	}
	return nil
}

func (s *Space) validateTraffic(t *Traffic) error {
	in := func(v string, set []string, name string) error {
		if !slices.Contains(set, v) {
			return fmt.Errorf("%s %q not in %v", name, v, set)
		}
		return nil
	}
	for _, e := range []error{
		in(t.Direction, s.Directions, "direction"), in(t.Memory, s.Memory, "memory"),
		in(t.QPType, s.QPTypes, "qp_type"), in(t.Opcode, s.Opcodes, "opcode"),
	} {
		if e != nil {
			return e
		}
	}
	if !opcodeValid(t.QPType, t.Opcode) {
		return fmt.Errorf("opcode %s is not valid on %s", t.Opcode, t.QPType)
	}
	for _, r := range []struct {
		name string
		r    IntRange
		v    int64
	}{{"mtu", s.MTU, t.MTU}, {"num_qps", s.NumQPs, t.NumQPs}, {"num_mrs", s.NumMRs, t.NumMRs}, {"mr_size", s.MRSize, t.MRSize},
		{"wq_depth", s.WQDepth, t.WQDepth}, {"wqe_batch", s.WQEBatch, t.WQEBatch}, {"sge_per_wqe", s.SGEPerWQE, t.SGEPerWQE}} {
		if !r.r.Contains(r.v) {
			return fmt.Errorf("%s %d outside the space", r.name, r.v)
		}
	}
	if t.WQEBatch > t.WQDepth {
		return fmt.Errorf("wqe_batch %d > wq_depth %d", t.WQEBatch, t.WQDepth)
	}
	m := s.MessageSizes
	if len(t.MessageSizes) < 1 || len(t.MessageSizes) > m.MaxLen {
		return fmt.Errorf("%d message sizes (want 1..%d)", len(t.MessageSizes), m.MaxLen)
	}
	for _, v := range t.MessageSizes {
		if v < m.Min || v > m.Max {
			return fmt.Errorf("message size %d outside %d..%d", v, m.Min, m.Max)
		}
		if t.QPType == "UD" && v > t.MTU {
			return fmt.Errorf("UD message size %d > mtu %d", v, t.MTU)
		}
	}
	if t.MaxMsg() > t.MRSize {
		return fmt.Errorf("message size %d > mr_size %d", t.MaxMsg(), t.MRSize)
	}
	if t.NumMRs*t.MRSize > s.MaxRegisteredBytes {
		return fmt.Errorf("num_mrs × mr_size = %d > max_registered_bytes %d", t.NumMRs*t.MRSize, s.MaxRegisteredBytes)
	}
	if len(t.Events) != s.Events.Slots {
		return fmt.Errorf("%d event slots (want %d)", len(t.Events), s.Events.Slots)
	}
	for _, e := range t.Events {
		if e.PSN < 0 {
			continue
		}
		if !slices.Contains(s.Events.PSNs, e.PSN) || e.Msg < 0 || e.Msg >= s.Events.Messages ||
			!slices.Contains(s.Events.Iters, e.Iter) || !slices.Contains(s.Events.Types, e.Type) {
			return fmt.Errorf("event %+v outside the space", e)
		}
		if int64(e.PSN) >= packets(t.MessageSizes[0], t.MTU) {
			return fmt.Errorf("event psn %d ≥ packets per message %d", e.PSN, packets(t.MessageSizes[0], t.MTU))
		}
	}
	return nil
}

// Random draws a workload uniformly over the discretised space: the number
// of traffics and each traffic's request-vector length are uniform, and
// given those every valid point (all constraints hold) is equally likely.
// Each traffic is drawn uniformly over the levels of every dimension and
// redrawn while it violates a constraint (rejection sampling). Repairing an
// invalid draw instead would pile draws onto the constraint boundaries
// (UD messages at the MTU, wqe_batch at wq_depth, mr_size at the largest
// message) and make those regions far more likely than their share of the
// space. After maxRejections draws (a space whose constraints are hard to
// meet) the last draw is repaired.
func (s *Space) Random(r *rand.Rand) Workload {
	n := 1 + r.IntN(s.MaxTraffics)
	w := Workload{Traffics: make([]Traffic, n)}
	for i := range w.Traffics {
		w.Traffics[i] = s.randomTraffic(r)
	}
	return w
}

// maxRejections bounds the redraws of one random traffic.
const maxRejections = 1000

func pick[T any](r *rand.Rand, v []T) T { return v[r.IntN(len(v))] }

// randomTraffic draws one valid traffic (see Random). The transport is
// drawn as one (qp_type, opcode) pair so UD-SEND is not over-represented.
func (s *Space) randomTraffic(r *rand.Rand) Traffic {
	var t Traffic
	n := 1 + r.IntN(s.MessageSizes.MaxLen)
	lv := s.msgLevels()
	for try := 0; ; try++ {
		s.drawTraffic(r, &t, n, lv)
		if try+1 >= maxRejections {
			s.repair(&t, "")
			if s.validateTraffic(&t) != nil {
				s.smallest(&t)
			}
			return t
		}
		if s.validateTraffic(&t) == nil {
			return t
		}
	}
}

func (s *Space) drawTraffic(r *rand.Rand, t *Traffic, n int, lv []int64) {
	t.Direction = pick(r, s.Directions)
	t.Memory = pick(r, s.Memory)
	var pairs [][2]string
	for _, q := range s.QPTypes {
		for _, o := range s.opcodesFor(q) {
			pairs = append(pairs, [2]string{q, o})
		}
	}
	p := pick(r, pairs)
	t.QPType, t.Opcode = p[0], p[1]
	t.MTU = pick(r, s.MTU.Levels())
	t.NumQPs = pick(r, s.NumQPs.Levels())
	t.NumMRs = pick(r, s.NumMRs.Levels())
	t.MRSize = pick(r, s.MRSize.Levels())
	t.WQDepth = pick(r, s.WQDepth.Levels())
	t.WQEBatch = pick(r, s.WQEBatch.Levels())
	t.SGEPerWQE = pick(r, s.SGEPerWQE.Levels())
	t.MessageSizes = t.MessageSizes[:0]
	for range n {
		t.MessageSizes = append(t.MessageSizes, pick(r, lv))
	}
	t.Events = t.Events[:0]
	for range s.Events.Slots {
		t.Events = append(t.Events, s.randomEvent(r))
	}
	if s.Events.Slots == 0 {
		t.Events = nil
	}
}

func (s *Space) randomEvent(r *rand.Rand) Event {
	e := Event{PSN: -1, Iter: s.Events.Iters[0], Type: s.Events.Types[0]}
	if r.IntN(len(s.Events.PSNs)+1) > 0 { // "none" is one more choice
		e.PSN = pick(r, s.Events.PSNs)
	}
	e.Msg = r.IntN(s.Events.Messages)
	e.Iter = pick(r, s.Events.Iters)
	e.Type = pick(r, s.Events.Types)
	return e
}

// smallest moves t to the smallest point of the space that keeps its
// direction, memory and a valid transport: valid whenever the space
// passed validate. It is the last resort of a draw that repairs could not
// make valid.
func (s *Space) smallest(t *Traffic) {
	if !opcodeValid(t.QPType, t.Opcode) || t.QPType == "UD" && s.MessageSizes.Min > s.MTU.hi() {
		for _, q := range s.QPTypes {
			if ops := s.opcodesFor(q); len(ops) > 0 && (q != "UD" || s.MessageSizes.Min <= s.MTU.hi()) {
				t.QPType, t.Opcode = q, ops[0]
				break
			}
		}
	}
	t.MTU = s.MTU.hi()
	t.NumQPs, t.NumMRs, t.SGEPerWQE = s.NumQPs.lo(), s.NumMRs.lo(), s.SGEPerWQE.lo()
	t.WQEBatch = s.WQEBatch.lo()
	t.WQDepth = ceilLevel(s.WQDepth.Levels(), t.WQEBatch)
	for i := range t.MessageSizes {
		t.MessageSizes[i] = s.MessageSizes.Min
	}
	t.MRSize = ceilLevel(s.MRSize.Levels(), s.MessageSizes.Min)
	for i := range t.Events {
		t.Events[i].PSN = -1
	}
}

// repair enforces the constraints, changing dimensions other than keep
// (a dimension name, or "" for none) where it can.
func (s *Space) repair(t *Traffic, keep string) {
	if !opcodeValid(t.QPType, t.Opcode) && keep == "opcode" {
		// Change the QP type to one that supports the opcode.
		for _, q := range s.QPTypes {
			if opcodeValid(q, t.Opcode) {
				t.QPType = q
				break
			}
		}
	}
	// No QP type of the space supports the opcode: change the opcode.
	if !opcodeValid(t.QPType, t.Opcode) {
		if ops := s.opcodesFor(t.QPType); len(ops) > 0 {
			t.Opcode = ops[0]
			if slices.Contains(ops, "WRITE") && t.QPType != "UD" {
				t.Opcode = "WRITE"
			}
		}
	}
	// No opcode of the space is valid on the (kept) QP type: change the QP
	// type after all.
	if !opcodeValid(t.QPType, t.Opcode) {
		for _, q := range s.QPTypes {
			if opcodeValid(q, t.Opcode) {
				t.QPType = q
				break
			}
		}
	}
	if t.QPType == "UD" {
		if keep == "msg" && t.MaxMsg() > t.MTU {
			// Raise the MTU to fit the messages if that is possible.
			for _, m := range s.MTU.Levels() {
				if m >= t.MaxMsg() {
					t.MTU = m
					break
				}
			}
		}
		for i, v := range t.MessageSizes {
			if v > t.MTU {
				t.MessageSizes[i] = floorLevel(s.msgLevels(), t.MTU)
			}
		}
	}
	if t.WQEBatch > t.WQDepth && keep == "wqe_batch" {
		t.WQDepth = ceilLevel(s.WQDepth.Levels(), t.WQEBatch)
	}
	if t.WQEBatch > t.WQDepth {
		// wqe_batch is not kept, or no wq_depth level of the space is deep
		// enough: lower the batch.
		t.WQEBatch = floorLevel(s.WQEBatch.Levels(), t.WQDepth)
	}
	if t.WQEBatch > t.WQDepth {
		// No batch level is small enough for the (kept) depth: deepen it.
		t.WQDepth = ceilLevel(s.WQDepth.Levels(), t.WQEBatch)
	}
	if t.MaxMsg() > t.MRSize && keep != "mr_size" {
		t.MRSize = ceilLevel(s.MRSize.Levels(), t.MaxMsg())
	}
	if t.MaxMsg() > t.MRSize {
		// mr_size is kept, or no level of the space holds the messages:
		// shrink the messages instead.
		mx := floorLevel(s.msgLevels(), t.MRSize)
		for i, v := range t.MessageSizes {
			t.MessageSizes[i] = min(v, mx)
		}
	}
	if t.MaxMsg() > t.MRSize {
		// Even the smallest message level exceeds the kept mr_size: change
		// mr_size after all.
		t.MRSize = ceilLevel(s.MRSize.Levels(), t.MaxMsg())
	}
	if t.NumMRs*t.MRSize > s.MaxRegisteredBytes {
		// Shrink mr_size toward the cap (never below the messages) when
		// num_mrs is kept, then num_mrs, then mr_size for any other kept
		// dimension. Still over the cap means no level fits: Validate
		// reports it and Mutate tries another neighbour.
		mr := s.MRSize.Levels()
		shrinkMR := func() {
			t.MRSize = max(floorLevel(mr, s.MaxRegisteredBytes/t.NumMRs), ceilLevel(mr, t.MaxMsg()))
		}
		if keep == "num_mrs" {
			shrinkMR()
		}
		if t.NumMRs*t.MRSize > s.MaxRegisteredBytes {
			t.NumMRs = floorLevel(s.NumMRs.Levels(), s.MaxRegisteredBytes/t.MRSize)
		}
		if t.NumMRs*t.MRSize > s.MaxRegisteredBytes && keep != "mr_size" {
			shrinkMR()
		}
	}
	if s.Events.Slots > 0 {
		np := packets(t.MessageSizes[0], t.MTU)
		for i := range t.Events {
			e := &t.Events[i]
			if e.PSN >= 0 && int64(e.PSN) >= np {
				e.PSN = -1
				for _, p := range s.Events.PSNs {
					if int64(p) < np {
						e.PSN = max(e.PSN, p)
					}
				}
			}
		}
	}
}

// floorLevel returns the largest level ≤ v, or the smallest level.
func floorLevel(lv []int64, v int64) int64 {
	i := sort.Search(len(lv), func(i int) bool { return lv[i] > v })
	if i == 0 {
		return lv[0]
	}
	return lv[i-1]
}

// ceilLevel returns the smallest level ≥ v, or the largest level.
func ceilLevel(lv []int64, v int64) int64 {
	i := sort.Search(len(lv), func(i int) bool { return lv[i] >= v })
	if i == len(lv) {
		return lv[len(lv)-1]
	}
	return lv[i]
}

// nearestIndex returns the index of the level closest to v (log scale).
func nearestIndex(lv []int64, v int64) int {
	i := sort.Search(len(lv), func(i int) bool { return lv[i] >= v })
	if i == len(lv) {
		return len(lv) - 1
	}
	if i > 0 && v*v < lv[i]*lv[i-1] {
		return i - 1
	}
	return i
}

// Mutate returns a neighbour of w that differs in one dimension (plus any
// constraint repairs): with probability 0.7 a local step of one or two
// levels, otherwise a jump to a uniformly drawn value. It may also add or
// remove a traffic.
func (s *Space) Mutate(r *rand.Rand, w Workload) Workload {
	out := w.Clone()
	for try := 0; try < 32; try++ {
		s.mutateOnce(r, &out)
		if s.Validate(out) != nil {
			// A repair the space could not satisfy: never hand the search
			// an invalid neighbour; start again from w.
			out = w.Clone()
			continue
		}
		if !out.Equal(w) {
			return out
		}
	}
	return out
}

func (s *Space) mutateOnce(r *rand.Rand, w *Workload) {
	if s.MaxTraffics > 1 && r.IntN(12) == 0 {
		if len(w.Traffics) < s.MaxTraffics && (len(w.Traffics) == 1 || r.IntN(2) == 0) {
			w.Traffics = append(w.Traffics, s.randomTraffic(r))
		} else if len(w.Traffics) > 1 {
			i := r.IntN(len(w.Traffics))
			w.Traffics = slices.Delete(w.Traffics, i, i+1)
		}
		return
	}
	dims := s.mutableDims()
	if len(dims) == 0 {
		return // every dimension has one value: w has no neighbour
	}
	t := &w.Traffics[r.IntN(len(w.Traffics))]
	d := pick(r, dims)
	local := r.Float64() < 0.7
	step := func(lv []int64, v int64) int64 {
		if !local {
			return pick(r, lv)
		}
		return shiftLevel(lv, v, randomStep(r))
	}
	switch d {
	case "direction":
		t.Direction = pick(r, s.Directions)
	case "memory":
		t.Memory = pick(r, s.Memory)
	case "qp_type":
		t.QPType = pick(r, s.QPTypes)
	case "opcode":
		t.Opcode = pick(r, s.Opcodes)
	case "msg":
		lv := s.msgLevels()
		switch op := r.IntN(6); {
		case op == 0 && len(t.MessageSizes) < s.MessageSizes.MaxLen:
			i := r.IntN(len(t.MessageSizes) + 1)
			t.MessageSizes = slices.Insert(t.MessageSizes, i, pick(r, lv))
		case op == 1 && len(t.MessageSizes) > 1:
			i := r.IntN(len(t.MessageSizes))
			t.MessageSizes = slices.Delete(t.MessageSizes, i, i+1)
		case op >= 4:
			// The whole request vector moves: every size by the same
			// number of levels (local) or to one drawn level (jump).
			k, to := randomStep(r), pick(r, lv)
			for i, v := range t.MessageSizes {
				if local {
					t.MessageSizes[i] = shiftLevel(lv, v, k)
				} else {
					t.MessageSizes[i] = to
				}
			}
		default:
			i := r.IntN(len(t.MessageSizes))
			t.MessageSizes[i] = step(lv, t.MessageSizes[i])
		}
	case "events":
		i := r.IntN(len(t.Events))
		e := &t.Events[i]
		switch r.IntN(4) {
		case 0:
			*e = s.randomEvent(r)
		case 1:
			e.Msg = r.IntN(s.Events.Messages)
		case 2:
			e.Iter = pick(r, s.Events.Iters)
		default:
			ps := append([]int{-1}, s.Events.PSNs...)
			j := slices.Index(ps, e.PSN)
			if local && j >= 0 {
				j = max(0, min(len(ps)-1, j+pick(r, []int{-1, 1})))
				e.PSN = ps[j]
			} else {
				e.PSN = pick(r, ps)
			}
		}
	default:
		nd := numDims[d]
		f := nd.field(t)
		*f = step(nd.rng(s).Levels(), *f)
	}
	s.repair(t, d)
}

// randomStep draws a local step: ±1 or ±2 levels.
func randomStep(r *rand.Rand) int {
	k := 1 + r.IntN(2)
	if r.IntN(2) == 0 {
		k = -k
	}
	return k
}

// shiftLevel moves v by k levels of lv, clamped to the ends.
func shiftLevel(lv []int64, v int64, k int) int64 {
	return lv[max(0, min(len(lv)-1, nearestIndex(lv, v)+k))]
}

// mutableDims lists the traffic dimensions with more than one value.
func (s *Space) mutableDims() []string {
	var out []string
	add := func(name string, n int) {
		if n > 1 {
			out = append(out, name)
		}
	}
	add("direction", len(s.Directions))
	add("memory", len(s.Memory))
	add("qp_type", len(s.QPTypes))
	add("opcode", len(s.Opcodes))
	add("mtu", len(s.MTU.Levels()))
	add("num_qps", len(s.NumQPs.Levels()))
	add("num_mrs", len(s.NumMRs.Levels()))
	add("mr_size", len(s.MRSize.Levels()))
	add("wq_depth", len(s.WQDepth.Levels()))
	add("wqe_batch", len(s.WQEBatch.Levels()))
	add("sge_per_wqe", len(s.SGEPerWQE.Levels()))
	add("msg", max(len(s.msgLevels()), s.MessageSizes.MaxLen))
	if s.Events.Slots > 0 {
		out = append(out, "events")
	}
	return out
}
