package collie

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Cond is the condition of one dimension of an MFS: a set of allowed values
// (Strs for named values, Ints for numbers), or a range [Min, Max] where a
// nil bound is open. Its JSON form is {"values":[…]} or {"min":…,"max":…}.
type Cond struct {
	Strs     []string
	Ints     []int64
	Min, Max *int64
}

// Values returns a value-set condition over strings.
func Values(v ...string) Cond { return Cond{Strs: v} }

// IntValues returns a value-set condition over numbers.
func IntValues(v ...int64) Cond { return Cond{Ints: v} }

// Range returns a range condition; pass math.MinInt64 / math.MaxInt64 for
// an open side.
func Range(lo, hi int64) Cond {
	var c Cond
	if lo != math.MinInt64 {
		c.Min = &lo
	}
	if hi != math.MaxInt64 {
		c.Max = &hi
	}
	return c
}

// HoldsStr reports whether a named value satisfies c.
func (c Cond) HoldsStr(v string) bool { return slices.Contains(c.Strs, v) }

// HoldsInt reports whether a number satisfies c.
func (c Cond) HoldsInt(v int64) bool {
	if c.Ints != nil {
		return slices.Contains(c.Ints, v)
	}
	if c.Strs != nil {
		return false
	}
	return (c.Min == nil || v >= *c.Min) && (c.Max == nil || v <= *c.Max)
}

func (c Cond) isRange() bool { return c.Strs == nil && c.Ints == nil }

// MarshalJSON implements json.Marshaler.
func (c Cond) MarshalJSON() ([]byte, error) {
	switch {
	case c.Strs != nil:
		return json.Marshal(map[string]any{"values": c.Strs})
	case c.Ints != nil:
		return json.Marshal(map[string]any{"values": c.Ints})
	}
	m := map[string]int64{}
	if c.Min != nil {
		m["min"] = *c.Min
	}
	if c.Max != nil {
		m["max"] = *c.Max
	}
	return json.Marshal(m)
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Cond) UnmarshalJSON(b []byte) error {
	var raw struct {
		Values []any   `json:"values"`
		Min    *int64  `json:"min"`
		Max    *int64  `json:"max"`
		Extra  *string `json:"-"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("condition %s: %w", b, err)
	}
	*c = Cond{Min: raw.Min, Max: raw.Max}
	if raw.Values != nil {
		if raw.Min != nil || raw.Max != nil {
			return fmt.Errorf("condition %s: values and min/max together", b)
		}
		for _, v := range raw.Values {
			switch v := v.(type) {
			case string:
				c.Strs = append(c.Strs, v)
			case json.Number:
				n, err := v.Int64()
				if err != nil {
					return fmt.Errorf("condition %s: %w", b, err)
				}
				c.Ints = append(c.Ints, n)
			default:
				return fmt.Errorf("condition %s: value %v is neither a string nor an integer", b, v)
			}
		}
		if c.Strs != nil && c.Ints != nil {
			return fmt.Errorf("condition %s: mixed strings and numbers", b)
		}
		if c.Strs == nil && c.Ints == nil {
			return fmt.Errorf("condition %s: empty values", b)
		}
	} else if raw.Min == nil && raw.Max == nil {
		return fmt.Errorf("condition %s: want values, min or max", b)
	}
	return nil
}

// UnmarshalYAML lets planted-anomaly and space files use the same form.
func (c *Cond) UnmarshalYAML(unmarshal func(any) error) error {
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return c.UnmarshalJSON(b)
}

func (c Cond) String() string {
	switch {
	case c.Strs != nil:
		return "∈ {" + strings.Join(c.Strs, ", ") + "}"
	case c.Ints != nil:
		s := make([]string, len(c.Ints))
		for i, v := range c.Ints {
			s[i] = strconv.FormatInt(v, 10)
		}
		return "∈ {" + strings.Join(s, ", ") + "}"
	case c.Min != nil && c.Max != nil:
		return fmt.Sprintf("in [%d, %d]", *c.Min, *c.Max)
	case c.Min != nil:
		return fmt.Sprintf("≥ %d", *c.Min)
	case c.Max != nil:
		return fmt.Sprintf("≤ %d", *c.Max)
	}
	return "any"
}

// Conds are the conditions on one traffic, by dimension name. An absent
// dimension is "any value".
type Conds map[string]Cond

// MFS is a minimal feature set: one Conds per traffic the anomaly needs. A
// workload matches when each entry is satisfied by a distinct traffic.
//
// JSON: a one-traffic MFS is the flat object {dim: cond}; with several
// traffics every key is prefixed by the entry, "t0.direction",
// "t1.direction".
type MFS []Conds

// MarshalJSON implements json.Marshaler.
func (m MFS) MarshalJSON() ([]byte, error) {
	flat := map[string]Cond{}
	for i, c := range m {
		for k, v := range c {
			if len(m) > 1 {
				k = fmt.Sprintf("t%d.%s", i, k)
			}
			flat[k] = v
		}
	}
	return json.Marshal(flat)
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *MFS) UnmarshalJSON(b []byte) error {
	var flat map[string]Cond
	if err := json.Unmarshal(b, &flat); err != nil {
		return err
	}
	out, err := unflatten(flat)
	if err != nil {
		return err
	}
	*m = out
	return nil
}

func unflatten(flat map[string]Cond) (MFS, error) {
	var out MFS
	for k, v := range flat {
		idx := 0
		if strings.HasPrefix(k, "t") && strings.Contains(k, ".") {
			dot := strings.IndexByte(k, '.')
			n, err := strconv.Atoi(k[1:dot])
			if err != nil || n < 0 || n > 15 {
				return nil, fmt.Errorf("mfs key %q: bad traffic prefix", k)
			}
			idx, k = n, k[dot+1:]
		}
		if !knownDim(k) {
			return nil, fmt.Errorf("mfs key %q: unknown dimension", k)
		}
		for len(out) <= idx {
			out = append(out, Conds{})
		}
		out[idx][k] = v
	}
	if len(out) == 0 {
		out = MFS{Conds{}}
	}
	return out, nil
}

// String renders the conditions for people, one per dimension.
func (m MFS) String() string {
	var parts []string
	for i, c := range m {
		for _, k := range slices.Sorted(maps.Keys(c)) {
			p := k
			if len(m) > 1 {
				p = fmt.Sprintf("traffic %d %s", i, k)
			}
			parts = append(parts, p+" "+c[k].String())
		}
	}
	if len(parts) == 0 {
		return "(every workload)"
	}
	return strings.Join(parts, ", ")
}

// Match reports whether w is in the MFS: every entry is satisfied by a
// distinct traffic of w (an exact injective assignment, tried exhaustively).
func (m MFS) Match(w Workload) bool {
	if len(m) > len(w.Traffics) {
		return false
	}
	used := make([]bool, len(w.Traffics))
	var assign func(i int) bool
	assign = func(i int) bool {
		if i == len(m) {
			return true
		}
		for j := range w.Traffics {
			if !used[j] && m[i].MatchTraffic(&w.Traffics[j]) {
				used[j] = true
				if assign(i + 1) {
					return true
				}
				used[j] = false
			}
		}
		return false
	}
	return assign(0)
}

// MatchTraffic reports whether one traffic satisfies every condition.
func (c Conds) MatchTraffic(t *Traffic) bool {
	for dim, cond := range c {
		v, ok := dimValue(t, dim)
		if !ok {
			return false
		}
		if v.str != "" || v.isStr {
			if !cond.HoldsStr(v.str) {
				return false
			}
		} else if !cond.HoldsInt(v.n) {
			return false
		}
	}
	return true
}

// MatchAny reports whether w matches any MFS of the set.
func MatchAny(set []MFS, w Workload) bool {
	for _, m := range set {
		if m.Match(w) {
			return true
		}
	}
	return false
}

// value is one dimension's value on a traffic.
type value struct {
	isStr bool
	str   string
	n     int64
}

// Dimension names used in MFS conditions.
var baseDims = []string{"direction", "memory", "qp_type", "opcode", "mtu", "num_qps", "num_mrs", "mr_size",
	"wq_depth", "wqe_batch", "sge_per_wqe", "msg_size_max", "msg_size_min", "msg_count"}

func knownDim(d string) bool {
	if slices.Contains(baseDims, d) {
		return true
	}
	_, _, ok := eventDim(d)
	return ok
}

// eventDim parses "event<i>_<field>".
func eventDim(d string) (slot int, field string, ok bool) {
	rest, found := strings.CutPrefix(d, "event")
	if !found {
		return 0, "", false
	}
	num, field, found := strings.Cut(rest, "_")
	n, err := strconv.Atoi(num)
	if !found || err != nil || n < 0 {
		return 0, "", false
	}
	switch field {
	case "psn", "msg", "iter", "type":
		return n, field, true
	}
	return 0, "", false
}

func dimValue(t *Traffic, d string) (value, bool) {
	s := func(v string) (value, bool) { return value{isStr: true, str: v}, true }
	n := func(v int64) (value, bool) { return value{n: v}, true }
	switch d {
	case "direction":
		return s(t.Direction)
	case "memory":
		return s(t.Memory)
	case "qp_type":
		return s(t.QPType)
	case "opcode":
		return s(t.Opcode)
	case "msg_size_max":
		if len(t.MessageSizes) == 0 {
			return value{}, false
		}
		return n(t.MaxMsg())
	case "msg_size_min":
		if len(t.MessageSizes) == 0 {
			return value{}, false
		}
		return n(t.MinMsg())
	case "msg_count":
		return n(int64(len(t.MessageSizes)))
	}
	if nd, ok := numDims[d]; ok {
		return n(*nd.field(t))
	}
	slot, f, ok := eventDim(d)
	if !ok || slot >= len(t.Events) {
		return value{}, false
	}
	e := t.Events[slot]
	switch f {
	case "psn":
		return n(int64(e.PSN))
	case "msg":
		return n(int64(e.Msg))
	case "iter":
		return n(int64(e.Iter))
	}
	return s(e.Type)
}

// setDim sets one dimension of t (message-size dimensions reshape the
// vector: msg_size_max caps every size and raises the largest to v,
// msg_size_min the reverse), then repairs the other dimensions.
func (s *Space) setDim(t *Traffic, d string, v value) {
	keep := d
	switch d {
	case "direction":
		t.Direction = v.str
	case "memory":
		t.Memory = v.str
	case "qp_type":
		t.QPType = v.str
	case "opcode":
		t.Opcode = v.str
	case "msg_size_max":
		i := slices.Index(t.MessageSizes, t.MaxMsg())
		for j := range t.MessageSizes {
			t.MessageSizes[j] = min(t.MessageSizes[j], v.n)
		}
		t.MessageSizes[i] = v.n
		keep = "msg"
	case "msg_size_min":
		i := slices.Index(t.MessageSizes, t.MinMsg())
		for j := range t.MessageSizes {
			t.MessageSizes[j] = max(t.MessageSizes[j], v.n)
		}
		t.MessageSizes[i] = v.n
		keep = "msg"
	case "msg_count":
		for int64(len(t.MessageSizes)) < v.n {
			t.MessageSizes = append(t.MessageSizes, t.MessageSizes[len(t.MessageSizes)-1])
		}
		t.MessageSizes = t.MessageSizes[:v.n]
		keep = "msg"
	default:
		if nd, ok := numDims[d]; ok {
			*nd.field(t) = v.n
			break
		}
		slot, f, ok := eventDim(d)
		if !ok || slot >= len(t.Events) {
			return
		}
		e := &t.Events[slot]
		switch f {
		case "psn":
			e.PSN = int(v.n)
		case "msg":
			e.Msg = int(v.n)
		case "iter":
			e.Iter = int(v.n)
		case "type":
			e.Type = v.str
		}
		keep = "events"
	}
	s.repair(t, keep)
}

// dimDomain describes how the MFS algorithm probes a dimension: the named
// alternatives of a discrete dimension, or the ordered levels of a
// continuous one.
type dimDomain struct {
	name   string
	strs   []string // discrete named values
	ints   []int64  // discrete numbers (mtu, event fields)
	levels []int64  // continuous: probe regions outward
}

// mfsDims lists the dimensions the MFS algorithm probes, in order.
func (s *Space) mfsDims() []dimDomain {
	var out []dimDomain
	addS := func(n string, v []string) {
		if len(v) > 1 {
			out = append(out, dimDomain{name: n, strs: v})
		}
	}
	addL := func(n string, r IntRange) {
		if lv := r.Levels(); len(lv) > 1 {
			out = append(out, dimDomain{name: n, levels: lv})
		}
	}
	addS("direction", s.Directions)
	addS("memory", s.Memory)
	addS("qp_type", s.QPTypes)
	addS("opcode", s.Opcodes)
	if lv := s.MTU.Levels(); len(lv) > 1 {
		out = append(out, dimDomain{name: "mtu", ints: lv})
	}
	addL("num_qps", s.NumQPs)
	addL("num_mrs", s.NumMRs)
	addL("mr_size", s.MRSize)
	addL("wq_depth", s.WQDepth)
	addL("wqe_batch", s.WQEBatch)
	addL("sge_per_wqe", s.SGEPerWQE)
	if lv := s.msgLevels(); len(lv) > 1 {
		out = append(out, dimDomain{name: "msg_size_max", levels: lv}, dimDomain{name: "msg_size_min", levels: lv})
	}
	for i := range s.Events.Slots {
		psns := []int64{-1}
		for _, p := range s.Events.PSNs {
			psns = append(psns, int64(p))
		}
		out = append(out, dimDomain{name: fmt.Sprintf("event%d_psn", i), ints: psns})
		var msgs, iters []int64
		for m := range s.Events.Messages {
			msgs = append(msgs, int64(m))
		}
		for _, it := range s.Events.Iters {
			iters = append(iters, int64(it))
		}
		if len(msgs) > 1 {
			out = append(out, dimDomain{name: fmt.Sprintf("event%d_msg", i), ints: msgs})
		}
		if len(iters) > 1 {
			out = append(out, dimDomain{name: fmt.Sprintf("event%d_iter", i), ints: iters})
		}
		addS(fmt.Sprintf("event%d_type", i), s.Events.Types)
	}
	return out
}

// Prober runs one MFS probe and reports whether the workload still shows
// the anomaly's symptom.
type Prober func(w Workload) (anomalous bool, err error)

// MFSResult is the outcome of BuildMFS.
type MFSResult struct {
	MFS MFS
	// Reduced is the re-validated reduced point: the dimensions outside the
	// MFS set to their simplest values.
	Reduced Workload
	// Validated reports whether Reduced still showed the symptom. When it
	// did not, the MFS is narrowed to the point's value of every discrete
	// dimension.
	Validated bool
	// Probes is the number of probes run.
	Probes int
}

// BuildMFS runs the MFS algorithm (§5.2) on an anomalous workload w:
//
//  1. with several traffics, each traffic is tried alone; the first that
//     is anomalous alone becomes the point;
//  2. for every dimension of every traffic, discrete dimensions try each
//     alternative value, and continuous ones probe their discretised
//     levels outward (the end level, then a binary search for the
//     boundary); a dimension whose every probe stays anomalous is not in
//     the MFS. A continuous level is probed only when the constraints allow
//     it without changing a coupled dimension (a wq_depth below the batch,
//     an mr_size below the largest message): the coupled dimension's own
//     condition covers it, and probing it would blame the wrong dimension.
//     A discrete value that the constraints only allow with a change of
//     another dimension (UD turns a WRITE into a SEND) is probed last, with
//     that change, and only when the changed point is inside the other
//     conditions; otherwise it is left out of the MFS;
//  3. the reduced point (the other dimensions at their simplest values) is
//     run again to validate the MFS.
//
// Probes that the constraints turn back into w itself are not run. The
// prober may answer from earlier measurements of the same workload (the
// search does): the cost of an MFS is the probes it could not reuse.
func (s *Space) BuildMFS(w Workload, probe Prober) (MFSResult, error) {
	var res MFSResult
	run := func(p Workload) (bool, error) {
		if p.Equal(w) {
			return true, nil
		}
		if s.Validate(p) != nil {
			return false, nil
		}
		res.Probes++
		return probe(p)
	}
	w = w.Clone()
	if len(w.Traffics) > 1 {
		for i := range w.Traffics {
			alone := Workload{Traffics: []Traffic{w.Traffics[i].clone()}}
			ok, err := run(alone)
			if err != nil {
				return res, err
			}
			if ok {
				w = alone
				break
			}
		}
	}
	res.MFS = make(MFS, len(w.Traffics))
	for ti := range w.Traffics {
		conds := Conds{}
		type coupledAlt struct {
			dim    string
			alt    value
			strs   bool
			domain int
		}
		var coupled []coupledAlt
		for _, d := range s.mfsDims() {
			cur, _ := dimValue(&w.Traffics[ti], d.name)
			variant := func(v value) Workload {
				p := w.Clone()
				s.setDim(&p.Traffics[ti], d.name, v)
				return p
			}
			switch {
			case d.strs != nil || d.ints != nil:
				var allowed []value
				tested, all := 0, true
				for _, alt := range condValues(Cond{Strs: d.strs, Ints: d.ints}) {
					if alt == cur {
						allowed = append(allowed, alt)
						continue
					}
					p := w.Clone()
					if !s.setOnly(&p.Traffics[ti], d.name, alt) {
						coupled = append(coupled, coupledAlt{d.name, alt, d.strs != nil, len(d.strs) + len(d.ints)})
						all = false
						continue
					}
					ok, err := run(p)
					if err != nil {
						return res, err
					}
					tested++
					if ok {
						allowed = append(allowed, alt)
					} else {
						all = false
					}
				}
				if tested > 0 && !all {
					conds[d.name] = valuesCond(allowed, d.strs != nil)
				}
			default:
				// Only the levels the constraints allow without changing a
				// coupled dimension are probed (a smaller mr_size would cut
				// the messages, a smaller wq_depth the batch): the coupled
				// dimension's own condition covers those levels.
				var reach []int64
				for _, v := range d.levels {
					p := variant(value{n: v})
					if got, _ := dimValue(&p.Traffics[ti], d.name); got.n == v && !coupledChanged(&w.Traffics[ti], &p.Traffics[ti], d.name) {
						reach = append(reach, v)
					}
				}
				if !slices.Contains(reach, cur.n) {
					reach = append(reach, cur.n)
					slices.Sort(reach)
				}
				lo, hi, err := s.walk(reach, cur.n, func(v int64) (bool, error) {
					return run(variant(value{n: v}))
				})
				if err != nil {
					return res, err
				}
				if lo != math.MinInt64 || hi != math.MaxInt64 {
					conds[d.name] = Range(lo, hi)
				}
			}
		}
		// A value that changes another dimension with it (UD turns a WRITE
		// into a SEND, a 1024 MTU cuts a UD traffic's 4096 B messages) is
		// probed once every dimension has its condition, with the coupled
		// change: when the changed point is inside the conditions (SEND is
		// allowed too) and still anomalous, the value joins its condition.
		for _, c := range coupled {
			cond, ok := conds[c.dim]
			if !ok {
				continue
			}
			p := w.Clone()
			s.setDim(&p.Traffics[ti], c.dim, c.alt)
			if got, _ := dimValue(&p.Traffics[ti], c.dim); got != c.alt {
				continue
			}
			vals := append(condValues(cond), c.alt)
			wider := maps.Clone(conds)
			wider[c.dim] = valuesCond(vals, c.strs)
			if !wider.MatchTraffic(&p.Traffics[ti]) {
				continue
			}
			anomalous, err := run(p)
			if err != nil {
				return res, err
			}
			if anomalous {
				conds = wider
				if len(vals) == c.domain {
					delete(conds, c.dim)
				}
			}
		}
		res.MFS[ti] = conds
	}
	// Re-validate the reduced point.
	red := w.Clone()
	for ti := range red.Traffics {
		s.simplify(&red.Traffics[ti], res.MFS[ti])
	}
	if !res.MFS.Match(red) || s.Validate(red) != nil {
		red = w.Clone()
	}
	res.Reduced = red
	ok, err := run(red)
	if err != nil {
		return res, err
	}
	res.Validated = ok
	if ok {
		if err := s.pruneAlternatives(&res, red, run); err != nil {
			return res, err
		}
	} else {
		// Not reproduced: narrow the MFS to the point's named dimensions
		// so that it does not hide a larger area than it has shown.
		for ti := range w.Traffics {
			for _, d := range s.mfsDims() {
				if _, has := res.MFS[ti][d.name]; has || d.levels != nil {
					continue
				}
				v, _ := dimValue(&w.Traffics[ti], d.name)
				if d.strs != nil {
					res.MFS[ti][d.name] = Values(v.str)
				} else {
					res.MFS[ti][d.name] = IntValues(v.n)
				}
			}
		}
	}
	return res, nil
}

// setOnly sets dimension d of t to v when the constraints allow it without
// changing another MFS dimension (UD turns a READ or WRITE into a SEND, a
// smaller UD MTU cuts the messages) and reports whether it did; otherwise t
// is left as it was. A probe that changes another dimension too would blame
// d for what the other change does.
func (s *Space) setOnly(t *Traffic, d string, v value) bool {
	p := t.clone()
	s.setDim(&p, d, v)
	if got, _ := dimValue(&p, d); got != v {
		return false
	}
	for _, o := range s.mfsDims() {
		if o.name == d {
			continue
		}
		x, _ := dimValue(t, o.name)
		y, _ := dimValue(&p, o.name)
		if x != y {
			return false
		}
	}
	*t = p
	return true
}

// pruneAlternatives checks the extra values of the named conditions at the
// corner of the MFS: the validated reduced point with every range condition
// at its tightest level (its finite end nearest the rest of the space). The
// per-dimension probes ran around one point, where a value of a named
// dimension can be anomalous because it lands in a neighbouring anomaly (a
// UD SEND point probed with RC lands in an RC SEND anomaly of the same
// subsystem) rather than because the anomaly does not depend on that
// dimension; at the corner the neighbour is usually inactive. A value that
// is not anomalous at the corner leaves the condition. When the corner
// itself is not anomalous (or not a valid point) nothing is pruned.
func (s *Space) pruneAlternatives(res *MFSResult, red Workload, run func(Workload) (bool, error)) error {
	type named struct {
		ti   int
		dim  string
		cond Cond
	}
	var several []named // in probing order
	for ti := range res.MFS {
		for _, d := range s.mfsDims() {
			if c := res.MFS[ti][d.name]; len(c.Strs)+len(c.Ints) > 1 {
				several = append(several, named{ti, d.name, c})
			}
		}
	}
	if len(several) == 0 {
		return nil
	}
	corner := red.Clone()
	tight := false
	for ti := range corner.Traffics {
		for _, d := range s.mfsDims() {
			c, ok := res.MFS[ti][d.name]
			if !ok || !c.isRange() {
				continue
			}
			v := c.Max
			if c.Min != nil {
				v = c.Min
			}
			if v == nil {
				continue
			}
			if cur, _ := dimValue(&corner.Traffics[ti], d.name); cur.n != *v {
				s.setDim(&corner.Traffics[ti], d.name, value{n: *v})
				tight = true
			}
		}
	}
	if !tight || s.Validate(corner) != nil || !res.MFS.Match(corner) {
		return nil
	}
	ok, err := run(corner)
	if err != nil || !ok {
		return err
	}
	for _, n := range several {
		cur, _ := dimValue(&corner.Traffics[n.ti], n.dim)
		var kept []value
		for _, alt := range condValues(n.cond) {
			keep := true
			if alt != cur {
				if p := corner.Clone(); s.setOnly(&p.Traffics[n.ti], n.dim, alt) {
					if keep, err = run(p); err != nil {
						return err
					}
				}
			}
			if keep {
				kept = append(kept, alt)
			}
		}
		res.MFS[n.ti][n.dim] = valuesCond(kept, n.cond.Strs != nil)
	}
	return nil
}

// valuesCond is the value-set condition of vals (strings or numbers; an
// empty set stays a set, not a range).
func valuesCond(vals []value, strs bool) Cond {
	c := Cond{Ints: []int64{}}
	if strs {
		c = Cond{Strs: []string{}}
	}
	for _, v := range vals {
		if v.isStr {
			c.Strs = append(c.Strs, v.str)
		} else {
			c.Ints = append(c.Ints, v.n)
		}
	}
	return c
}

// condValues lists the values of a value-set condition.
func condValues(c Cond) []value {
	var out []value
	for _, v := range c.Strs {
		out = append(out, value{isStr: true, str: v})
	}
	for _, v := range c.Ints {
		out = append(out, value{n: v})
	}
	return out
}

// coupledChanged reports whether probing dimension d changed a dimension
// tied to it by a constraint: wq_depth and wqe_batch, mr_size and the
// message sizes.
func coupledChanged(a, b *Traffic, d string) bool {
	switch d {
	case "wq_depth":
		return a.WQEBatch != b.WQEBatch
	case "wqe_batch":
		return a.WQDepth != b.WQDepth
	case "mr_size":
		return !slices.Equal(a.MessageSizes, b.MessageSizes) || a.NumMRs != b.NumMRs
	case "num_mrs":
		return a.MRSize != b.MRSize
	}
	return false
}

// walk finds the anomalous range of a continuous dimension around cur. Per
// side it probes the end level first (an anomalous end means the side is
// open) and otherwise binary-searches the boundary between cur and the end.
// lv holds the levels the constraints let the probes reach. An open side
// returns math.MinInt64 / math.MaxInt64.
func (s *Space) walk(lv []int64, cur int64, anomalous func(int64) (bool, error)) (lo, hi int64, err error) {
	ci := nearestIndex(lv, cur)
	side := func(dir int) (int64, error) {
		end := 0
		if dir > 0 {
			end = len(lv) - 1
		}
		if end == ci {
			return open(dir), nil
		}
		ok, err := anomalous(lv[end])
		if err != nil || ok {
			return open(dir), err
		}
		in, out := ci, end
		for in+dir != out {
			mid := (in + out) / 2
			ok, err := anomalous(lv[mid])
			if err != nil {
				return 0, err
			}
			if ok {
				in = mid
			} else {
				out = mid
			}
		}
		return lv[in], nil
	}
	if lo, err = side(-1); err != nil {
		return
	}
	hi, err = side(1)
	// Report the actual current value when it is off the level grid.
	if lo != math.MinInt64 && lo > cur {
		lo = cur
	}
	if hi != math.MaxInt64 && hi < cur {
		hi = cur
	}
	return
}

func open(dir int) int64 {
	if dir < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// simplify sets the dimensions without a condition to their simplest
// values (first named value, smallest level) and satisfies the conditions
// with values nearest the current ones.
func (s *Space) simplify(t *Traffic, c Conds) {
	for _, d := range s.mfsDims() {
		if _, ok := c[d.name]; ok {
			continue
		}
		switch {
		case d.strs != nil:
			// Unless the constraints would change another dimension with
			// it (a UD traffic's opcode stays SEND).
			s.setOnly(t, d.name, value{isStr: true, str: d.strs[0]})
		case d.ints != nil && d.name == "mtu":
			// Keep the MTU: the simplest MTU is not obvious.
		case d.ints != nil:
			if slot, f, ok := eventDim(d.name); ok && f == "psn" && slot < len(t.Events) {
				s.setDim(t, d.name, value{n: -1})
			}
		case d.name == "msg_size_max" || d.name == "msg_size_min":
			// Keep the message pattern.
		case d.name == "wq_depth":
			s.setDim(t, d.name, value{n: ceilLevel(d.levels, t.WQEBatch)})
		case d.name == "mr_size":
			s.setDim(t, d.name, value{n: ceilLevel(d.levels, t.MaxMsg())})
		default:
			s.setDim(t, d.name, value{n: d.levels[0]})
		}
	}
}
