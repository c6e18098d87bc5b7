package injector

// SetUndoHook sets the hook that sees how many entries and cells each
// atomic Write batch saved for its rollback (nil: none).
func SetUndoHook(f func(saved int)) { undoHook = f }
