package injector

// undoLog is how an atomic Write batch (ROLLBACK_ON_ERROR,
// DATAPLANE_ATOMIC; P4Runtime specification §12.2, "Batching and
// Ordering of Updates") is undone when one of its updates fails: before
// changing anything, each update records how to put back what it is about
// to change (a table entry, a default entry, counter or register cells, a
// clone session, their metadata). Undoing replays the records in reverse.
// The cost is proportional to what the batch touches, never to the
// switch's whole state, so the packet pipeline, which waits on the switch
// mutex meanwhile, is not held up by a large table.
//
// A nil *undoLog records nothing (batches that are not atomic). Used with
// the switch mutex held.
type undoLog struct {
	steps []func()
	// saved counts the entries and cells recorded (tests check that it
	// follows the batch).
	saved int
}

// undoHook, when set (tests), sees each atomic batch's saved count.
var undoHook func(saved int)

// save records undo, which puts back n saved entries or cells.
func (l *undoLog) save(n int, undo func()) {
	if l == nil {
		return
	}
	l.saved += n
	l.steps = append(l.steps, undo)
}

// rollback undoes every recorded change, the last first.
func (l *undoLog) rollback() {
	for i := len(l.steps) - 1; i >= 0; i-- {
		l.steps[i]()
	}
	l.steps = nil
}

// saveDefault records t's default entry and its metadata.
func (l *undoLog) saveDefault(t *table, meta metaStore) {
	if l == nil {
		return
	}
	id, def, defSet := t.info.id, t.def, t.defSet
	m, had := meta.defs[id]
	l.save(1, func() {
		t.def, t.defSet = def, defSet
		if had {
			meta.defs[id] = m
		} else {
			delete(meta.defs, id)
		}
	})
}

// saveEntry records the entry of t at key (old, nil when absent) and its
// metadata; added is the entry the update puts there, whose metadata the
// undo removes.
func (l *undoLog) saveEntry(t *table, key [4]uint64, old, added *entry, meta metaStore) {
	if l == nil {
		return
	}
	m, had := meta.entries[old]
	l.save(1, func() {
		if added != nil {
			delete(meta.entries, added)
		}
		if old == nil {
			delete(t.entries, key)
			return
		}
		t.entries[key] = old
		if had {
			meta.entries[old] = m
		}
	})
}

// saveCells records cells[lo:hi] of a counter or register.
func saveCells[T any](l *undoLog, cells []T, lo, hi int) {
	if l == nil {
		return
	}
	prev := append([]T(nil), cells[lo:hi]...)
	l.save(len(prev), func() { copy(cells[lo:hi], prev) })
}

// saveClone records clone session id (nil when absent).
func (l *undoLog) saveClone(sw *Switch, id uint32) {
	if l == nil {
		return
	}
	old, had := sw.clones[id]
	l.save(1, func() {
		if had {
			sw.clones[id] = old
		} else {
			delete(sw.clones, id)
		}
	})
}
