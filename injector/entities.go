package injector

import (
	"bytes"
	"maps"
	"slices"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// entryMeta is what a table entry carries for the controller only: the
// target stores it and returns it on reads (P4Runtime §"Table Entry").
type entryMeta struct {
	controller uint64 // controller_metadata
	metadata   []byte
	idleNs     int64 // idle_timeout_ns (tables with idle timeout only; no notifications are sent)
}

// metaStore holds the entryMeta of table entries (by entry: entries are
// immutable once installed, writes replace them) and of default entries
// (by table ID). Entries without metadata have none stored.
type metaStore struct {
	entries map[*entry]entryMeta
	defs    map[uint32]entryMeta
}

func newMetaStore() metaStore {
	return metaStore{entries: map[*entry]entryMeta{}, defs: map[uint32]entryMeta{}}
}

func (m metaStore) set(e *entry, em entryMeta) {
	if em.controller != 0 || em.metadata != nil || em.idleNs != 0 {
		m.entries[e] = em
	}
}

func metaOf(te *p4v1.TableEntry) entryMeta {
	//lint:ignore SA1019 deprecated in favour of metadata, but the spec still requires storing and returning it
	return entryMeta{controller: te.GetControllerMetadata(), metadata: te.GetMetadata(), idleNs: te.GetIdleTimeoutNs()}
}

// apply performs one update. Called with sw.mu held.
func (sw *Switch) apply(u *p4v1.Update, meta metaStore) error {
	e := u.GetEntity()
	switch {
	case e.GetEntity() == nil:
		return status.Error(codes.InvalidArgument, "update without an entity")
	case e.GetTableEntry() != nil:
		return sw.applyTable(u.GetType(), e.GetTableEntry(), meta)
	case e.GetCounterEntry() != nil:
		return sw.applyCounter(u.GetType(), e.GetCounterEntry())
	case e.GetRegisterEntry() != nil:
		return sw.applyRegister(u.GetType(), e.GetRegisterEntry())
	case e.GetPacketReplicationEngineEntry() != nil:
		return sw.applyPRE(u.GetType(), e.GetPacketReplicationEngineEntry())
	}
	return status.Error(codes.Unimplemented, "entity type not supported by the software target")
}

// parseEntry validates a table entry and converts it. For deletes the
// action is not required.
func (sw *Switch) parseEntry(te *p4v1.TableEntry, needAction bool) (*table, *entry, error) {
	t := sw.tables[te.GetTableId()]
	if t == nil {
		return nil, nil, status.Errorf(codes.NotFound, "unknown table ID %#x", te.GetTableId())
	}
	ti := t.info
	if te.GetPriority() != 0 {
		return nil, nil, status.Errorf(codes.InvalidArgument, "table %s: priority must be 0 for exact-match tables", ti.name)
	}
	e := &entry{}
	if !te.GetIsDefaultAction() {
		if len(te.GetMatch()) != len(ti.fields) {
			return nil, nil, status.Errorf(codes.InvalidArgument, "table %s: %d match fields, want %d (exact fields cannot be omitted)",
				ti.name, len(te.GetMatch()), len(ti.fields))
		}
		seen := map[uint32]bool{}
		for _, m := range te.GetMatch() {
			idx := -1
			for i, f := range ti.fields {
				if f.id == m.GetFieldId() {
					idx = i
				}
			}
			if idx < 0 {
				return nil, nil, status.Errorf(codes.InvalidArgument, "table %s: unknown match field ID %d", ti.name, m.GetFieldId())
			}
			if seen[m.GetFieldId()] {
				return nil, nil, status.Errorf(codes.InvalidArgument, "table %s: match field %s given twice", ti.name, ti.fields[idx].name)
			}
			seen[m.GetFieldId()] = true
			ex := m.GetExact()
			if ex == nil {
				return nil, nil, status.Errorf(codes.InvalidArgument, "table %s: field %s is exact-match", ti.name, ti.fields[idx].name)
			}
			v, err := decodeValue(ex.GetValue(), ti.fields[idx].width, ti.name+" "+ti.fields[idx].name)
			if err != nil {
				return nil, nil, err
			}
			e.key[idx] = v
		}
	} else if len(te.GetMatch()) != 0 {
		return nil, nil, status.Errorf(codes.InvalidArgument, "table %s: a default entry has no match", ti.name)
	}
	if !needAction {
		return t, e, nil
	}
	act := te.GetAction()
	if act == nil && te.GetIsDefaultAction() {
		return t, nil, nil // MODIFY without an action resets the default entry
	}
	if act == nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "table %s: entry without an action", ti.name)
	}
	if act.GetAction() == nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "table %s: only direct actions are supported", ti.name)
	}
	a := act.GetAction()
	ai := sw.sch.actions[a.GetActionId()]
	if ai == nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "unknown action ID %#x", a.GetActionId())
	}
	if !ti.actions[ai.id] {
		return nil, nil, status.Errorf(codes.InvalidArgument, "action %s is not an action of table %s", ai.name, ti.name)
	}
	if len(a.GetParams()) != len(ai.params) {
		return nil, nil, status.Errorf(codes.InvalidArgument, "action %s: %d parameters, want %d", ai.name, len(a.GetParams()), len(ai.params))
	}
	e.action = ai.id
	e.params = make([]uint64, len(ai.params))
	seen := map[uint32]bool{}
	for _, p := range a.GetParams() {
		idx := -1
		for i, pi := range ai.params {
			if pi.id == p.GetParamId() {
				idx = i
			}
		}
		if idx < 0 || seen[p.GetParamId()] {
			return nil, nil, status.Errorf(codes.InvalidArgument, "action %s: unknown or repeated parameter ID %d", ai.name, p.GetParamId())
		}
		seen[p.GetParamId()] = true
		v, err := decodeValue(p.GetValue(), ai.params[idx].width, ai.name+" "+ai.params[idx].name)
		if err != nil {
			return nil, nil, err
		}
		e.params[idx] = v
	}
	return t, e, nil
}

// checkEntryFields applies the P4Runtime rules on a written table entry's
// fields other than its key and action (§"Default Entry", §"Idle-timeout").
// is_const (field 13, not in APIVersion's protos) is refused by
// unknownFields.
func checkEntryFields(ti *tableInfo, te *p4v1.TableEntry) error {
	idle := te.GetIdleTimeoutNs() != 0 || te.GetTimeSinceLastHit() != nil
	switch {
	case idle && te.GetIsDefaultAction():
		return status.Errorf(codes.InvalidArgument, "table %s: a default entry has no idle timeout", ti.name)
	case idle && !ti.idle:
		return status.Errorf(codes.InvalidArgument, "table %s does not support idle timeout", ti.name)
	case te.GetTimeSinceLastHit() != nil:
		return status.Errorf(codes.InvalidArgument, "table %s: time_since_last_hit must be unset in a write", ti.name)
	}
	return nil
}

func (sw *Switch) applyTable(typ p4v1.Update_Type, te *p4v1.TableEntry, meta metaStore) error {
	t, e, err := sw.parseEntry(te, typ != p4v1.Update_DELETE)
	if err != nil {
		return err
	}
	if err := checkEntryFields(t.info, te); err != nil {
		return err
	}
	if te.GetIsDefaultAction() {
		if typ != p4v1.Update_MODIFY {
			return status.Errorf(codes.InvalidArgument, "table %s: the default entry can only be modified", t.info.name)
		}
		sw.undo.saveDefault(t, meta)
		delete(meta.defs, t.info.id)
		if e == nil { // reset to the P4 program's default action
			d := defaultActions[t.info.name]
			t.def, t.defSet = entry{action: sw.sch.byName[d.action], params: append([]uint64(nil), d.params...)}, false
			return nil
		}
		t.def, t.defSet = *e, true
		if m := metaOf(te); m.controller != 0 || m.metadata != nil {
			meta.defs[t.info.id] = m // idle timeout: refused above for default entries
		}
		return nil
	}
	if typ == p4v1.Update_INSERT && len(t.info.fields) == 0 {
		return status.Errorf(codes.InvalidArgument, "table %s is keyless: only its default entry can be written", t.info.name)
	}
	old := t.entries[e.key]
	added := e // the entry whose metadata an undo removes
	if typ == p4v1.Update_DELETE {
		added = nil
	}
	sw.undo.saveEntry(t, e.key, old, added, meta)
	switch typ {
	case p4v1.Update_INSERT:
		if old != nil {
			return status.Errorf(codes.AlreadyExists, "table %s: entry already exists", t.info.name)
		}
		if len(t.entries) >= t.info.size {
			return status.Errorf(codes.ResourceExhausted, "table %s is full (%d entries)", t.info.name, t.info.size)
		}
	case p4v1.Update_MODIFY, p4v1.Update_DELETE:
		if old == nil {
			return status.Errorf(codes.NotFound, "table %s: no such entry", t.info.name)
		}
		delete(meta.entries, old)
	default:
		return status.Errorf(codes.InvalidArgument, "unknown update type %v", typ)
	}
	if typ == p4v1.Update_DELETE {
		delete(t.entries, e.key)
		return nil
	}
	t.entries[e.key] = e
	meta.set(e, metaOf(te))
	return nil
}

func (sw *Switch) applyCounter(typ p4v1.Update_Type, ce *p4v1.CounterEntry) error {
	cells := sw.ctrs[ce.GetCounterId()]
	if cells == nil {
		return status.Errorf(codes.NotFound, "unknown counter ID %#x", ce.GetCounterId())
	}
	if typ != p4v1.Update_MODIFY {
		return status.Error(codes.InvalidArgument, "counter entries can only be modified")
	}
	lo, hi, err := cellRange(len(cells), ce.GetIndex(), "counter")
	if err != nil {
		return err
	}
	if ce.GetData() == nil { // "the counter value is not modified if data is not set"
		return nil
	}
	d := counterCell{uint64(ce.GetData().GetPacketCount()), uint64(ce.GetData().GetByteCount())}
	saveCells(sw.undo, cells, lo, hi)
	for i := lo; i < hi; i++ {
		cells[i] = d
	}
	return nil
}

func (sw *Switch) applyRegister(typ p4v1.Update_Type, re *p4v1.RegisterEntry) error {
	ri := sw.sch.registers[re.GetRegisterId()]
	if ri == nil {
		return status.Errorf(codes.NotFound, "unknown register ID %#x", re.GetRegisterId())
	}
	if typ != p4v1.Update_MODIFY {
		return status.Error(codes.InvalidArgument, "register entries can only be modified")
	}
	bs := re.GetData().GetBitstring()
	if bs == nil {
		return status.Errorf(codes.InvalidArgument, "register %s: data must be a bitstring", ri.name)
	}
	v, err := decodeValue(bs, ri.width, ri.name)
	if err != nil {
		return err
	}
	cells := sw.regs[ri.id]
	lo, hi, err := cellRange(len(cells), re.GetIndex(), "register "+ri.name)
	if err != nil {
		return err
	}
	saveCells(sw.undo, cells, lo, hi)
	for i := lo; i < hi; i++ {
		cells[i] = v
	}
	return nil
}

func (sw *Switch) applyPRE(typ p4v1.Update_Type, pre *p4v1.PacketReplicationEngineEntry) error {
	cs := pre.GetCloneSessionEntry()
	if cs == nil {
		return status.Error(codes.Unimplemented, "only clone sessions are supported")
	}
	id := cs.GetSessionId()
	if id == 0 || id > 1023 {
		return status.Errorf(codes.InvalidArgument, "clone session ID %d out of 1..1023", id)
	}
	old := sw.clones[id]
	switch typ {
	case p4v1.Update_INSERT, p4v1.Update_MODIFY:
		if typ == p4v1.Update_INSERT && old != nil {
			return status.Errorf(codes.AlreadyExists, "clone session %d exists", id)
		}
		if typ == p4v1.Update_MODIFY && old == nil {
			return status.Errorf(codes.NotFound, "clone session %d does not exist", id)
		}
		if cs.GetPacketLengthBytes() < 0 {
			return status.Error(codes.InvalidArgument, "negative packet_length_bytes")
		}
		s := &cloneSession{id: id, cos: cs.GetClassOfService(), truncate: int(cs.GetPacketLengthBytes())}
		for _, r := range cs.GetReplicas() {
			if r.GetEgressPort() > 511 {
				return status.Errorf(codes.InvalidArgument, "clone session %d: egress port %d out of range", id, r.GetEgressPort())
			}
			s.replicas = append(s.replicas, r.GetEgressPort())
			s.instances = append(s.instances, r.GetInstance())
		}
		sw.undo.saveClone(sw, id)
		sw.clones[id] = s
	case p4v1.Update_DELETE:
		if old == nil {
			return status.Errorf(codes.NotFound, "clone session %d does not exist", id)
		}
		sw.undo.saveClone(sw, id)
		delete(sw.clones, id)
	default:
		return status.Errorf(codes.InvalidArgument, "unknown update type %v", typ)
	}
	return nil
}

// encodeFn builds a Read answer. read returns one after copying, under
// sw.mu, everything the answer needs (immutable entry and clone-session
// pointers, the schema, copies of counter and register cells); the Server
// calls it after releasing sw.mu, so sorting, encoding and streaming never
// hold up the packet pipeline.
type encodeFn func() []*p4v1.Entity

// read snapshots the entities matching e (wildcards: table ID 0, empty
// match, no index, session ID 0). Called with sw.mu held; the returned
// function must be called without it. Table entries, default entries and
// clone sessions are never mutated once installed (writes replace them),
// so copying their pointers is a consistent snapshot.
func (sw *Switch) read(e *p4v1.Entity, meta metaStore) (encodeFn, error) {
	switch {
	case e.GetEntity() == nil:
		return nil, status.Error(codes.InvalidArgument, "empty entity: the entity oneof must be set (no wildcard read of the whole state)")
	case e.GetTableEntry() != nil:
		return sw.readTables(e.GetTableEntry(), meta)
	case e.GetCounterEntry() != nil:
		return sw.readCounters(e.GetCounterEntry())
	case e.GetRegisterEntry() != nil:
		return sw.readRegisters(e.GetRegisterEntry())
	case e.GetPacketReplicationEngineEntry() != nil:
		cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
		if cs == nil {
			return nil, status.Error(codes.Unimplemented, "only clone sessions are supported")
		}
		var snap []*cloneSession
		for _, id := range sortedIDs(sw.clones) {
			if cs.GetSessionId() != 0 && cs.GetSessionId() != id {
				continue
			}
			snap = append(snap, sw.clones[id])
		}
		if cs.GetSessionId() != 0 && len(snap) == 0 {
			return nil, status.Errorf(codes.NotFound, "clone session %d does not exist", cs.GetSessionId())
		}
		return func() []*p4v1.Entity {
			var out []*p4v1.Entity
			for _, s := range snap {
				ce := &p4v1.CloneSessionEntry{SessionId: s.id, ClassOfService: s.cos, PacketLengthBytes: int32(s.truncate)}
				for i, p := range s.replicas {
					ce.Replicas = append(ce.Replicas, &p4v1.Replica{EgressPort: p, Instance: s.instances[i]})
				}
				out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
					Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: ce}}}})
			}
			return out
		}, nil
	}
	return nil, status.Error(codes.Unimplemented, "entity type not supported by the software target")
}

func sortedIDs[V any](m map[uint32]V) []uint32 { return slices.Sorted(maps.Keys(m)) }

func encodeEntry(sch *schema, t *tableInfo, e *entry, m entryMeta, isDefault bool) *p4v1.Entity {
	//lint:ignore SA1019 deprecated in favour of metadata, but the spec still requires storing and returning it
	te := &p4v1.TableEntry{TableId: t.id, IsDefaultAction: isDefault, ControllerMetadata: m.controller, Metadata: m.metadata,
		IdleTimeoutNs: m.idleNs}
	if !isDefault {
		for i, f := range t.fields {
			te.Match = append(te.Match, &p4v1.FieldMatch{FieldId: f.id,
				FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: canonical(e.key[i])}}})
		}
	}
	a := &p4v1.Action{ActionId: e.action}
	if ai := sch.actions[e.action]; ai != nil {
		for i, p := range ai.params {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: p.id, Value: canonical(e.params[i])})
		}
	}
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

// tableSnap is one table's part of a Read: entries to sort (unless sorted
// is set) and encode without the lock.
type tableSnap struct {
	info      *tableInfo
	entries   []*entry
	meta      map[*entry]entryMeta // of entries with metadata
	isDefault bool
	sorted    bool
}

// entryFilter is a table read's filter on fields other than the key
// (P4Runtime §"Wildcard Reads"): zero values are wildcards.
type entryFilter struct {
	action     uint32
	priority   int32
	controller uint64
	metadata   []byte
}

func (f entryFilter) match(e *entry, m entryMeta) bool {
	return (f.action == 0 || e.action == f.action) && f.priority == 0 &&
		(f.controller == 0 || m.controller == f.controller) && (f.metadata == nil || bytes.Equal(m.metadata, f.metadata))
}

func (sw *Switch) readTables(q *p4v1.TableEntry, meta metaStore) (encodeFn, error) {
	//lint:ignore SA1019 deprecated in favour of metadata, but the spec still requires storing and returning it
	f := entryFilter{priority: q.GetPriority(), controller: q.GetControllerMetadata(), metadata: q.GetMetadata()}
	if len(f.metadata) == 0 {
		f.metadata = nil
	}
	if q.GetAction() != nil {
		a := q.GetAction().GetAction()
		if a == nil {
			return nil, status.Error(codes.InvalidArgument, "only a direct action's action_id can filter a read")
		}
		if a.GetActionId() != 0 && sw.sch.actions[a.GetActionId()] == nil {
			return nil, status.Errorf(codes.InvalidArgument, "unknown action ID %#x", a.GetActionId())
		}
		f.action = a.GetActionId()
	}
	if q.GetTableId() == 0 && (len(q.GetMatch()) > 0 || f.action != 0) {
		return nil, status.Error(codes.InvalidArgument, "table_id 0 reads every table: no match or action filter can be used")
	}
	ids := sortedIDs(sw.tables)
	if q.GetTableId() != 0 {
		if sw.tables[q.GetTableId()] == nil {
			return nil, status.Errorf(codes.NotFound, "unknown table ID %#x", q.GetTableId())
		}
		ids = []uint32{q.GetTableId()}
	}
	var snap []tableSnap
	for _, id := range ids {
		t := sw.tables[id]
		if q.GetIsDefaultAction() {
			def := t.def // a copy: restore and writes assign t.def
			if m := meta.defs[id]; f.match(&def, m) {
				snap = append(snap, tableSnap{info: t.info, entries: []*entry{&def}, meta: map[*entry]entryMeta{&def: m}, isDefault: true, sorted: true})
			}
			continue
		}
		if len(q.GetMatch()) > 0 {
			_, e, err := sw.parseEntry(&p4v1.TableEntry{TableId: id, Match: q.GetMatch()}, false)
			if err != nil {
				return nil, err
			}
			if got := t.entries[e.key]; got != nil && f.match(got, meta.entries[got]) {
				snap = append(snap, tableSnap{info: t.info, entries: []*entry{got}, meta: map[*entry]entryMeta{got: meta.entries[got]}, sorted: true})
			}
			continue
		}
		ts := tableSnap{info: t.info, entries: make([]*entry, 0, len(t.entries)), meta: map[*entry]entryMeta{}}
		for _, e := range t.entries {
			m, ok := meta.entries[e]
			if !f.match(e, m) {
				continue
			}
			ts.entries = append(ts.entries, e)
			if ok {
				ts.meta[e] = m
			}
		}
		snap = append(snap, ts)
	}
	sch := sw.sch
	return func() []*p4v1.Entity {
		n := 0
		for _, ts := range snap {
			n += len(ts.entries)
		}
		out := make([]*p4v1.Entity, 0, n)
		for _, ts := range snap {
			if !ts.sorted {
				sortEntries(ts.entries)
			}
			for _, e := range ts.entries {
				out = append(out, encodeEntry(sch, ts.info, e, ts.meta[e], ts.isDefault))
			}
		}
		return out
	}, nil
}

// cellRange is the index range [lo, hi) of a counter or register array a
// query selects.
func cellRange(n int, idx *p4v1.Index, what string) (lo, hi int, err error) {
	if idx == nil {
		return 0, n, nil
	}
	i := idx.GetIndex()
	if i < 0 {
		return 0, 0, status.Errorf(codes.InvalidArgument, "%s index %d is negative", what, i)
	}
	if i >= int64(n) {
		return 0, 0, status.Errorf(codes.OutOfRange, "%s index %d out of 0..%d", what, i, n-1)
	}
	return int(i), int(i) + 1, nil
}

func (sw *Switch) readCounters(q *p4v1.CounterEntry) (encodeFn, error) {
	return readCells(sw.ctrs, q.GetCounterId(), q.GetIndex(), "counter", func(id uint32, i int64, c counterCell) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
			CounterId: id, Index: &p4v1.Index{Index: i},
			Data: &p4v1.CounterData{PacketCount: int64(c.packets), ByteCount: int64(c.bytes)}}}}
	})
}

func (sw *Switch) readRegisters(q *p4v1.RegisterEntry) (encodeFn, error) {
	return readCells(sw.regs, q.GetRegisterId(), q.GetIndex(), "register", func(id uint32, i int64, v uint64) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
			RegisterId: id, Index: &p4v1.Index{Index: i},
			Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: canonical(v)}}}}}
	})
}

// readCells snapshots the cells a counter or register read asks for (all
// arrays of m when id is 0; the index range idx) — copies, since the
// pipeline keeps updating them — and returns the encoder of one entity per
// cell. Call it with the switch mutex held; the encoder runs without.
func readCells[C any](m map[uint32][]C, id uint32, idx *p4v1.Index, what string, entity func(id uint32, i int64, c C) *p4v1.Entity) (encodeFn, error) {
	ids := sortedIDs(m)
	if id != 0 {
		if m[id] == nil {
			return nil, status.Errorf(codes.NotFound, "unknown %s ID %#x", what, id)
		}
		ids = []uint32{id}
	}
	type part struct {
		id    uint32
		lo    int
		cells []C
	}
	var snap []part
	for _, id := range ids {
		cells := m[id]
		lo, hi, err := cellRange(len(cells), idx, what)
		if err != nil {
			return nil, err
		}
		snap = append(snap, part{id, lo, slices.Clone(cells[lo:hi])})
	}
	return func() []*p4v1.Entity {
		var out []*p4v1.Entity
		for _, p := range snap {
			for i, c := range p.cells {
				out = append(out, entity(p.id, int64(p.lo+i), c))
			}
		}
		return out
	}, nil
}
