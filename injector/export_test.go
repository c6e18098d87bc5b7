package injector

// SetReadEncodeHook sets the hook Read runs between its snapshot and its
// encoding (nil: none).
func SetReadEncodeHook(f func(*Switch)) { readEncodeHook = f }

// MutexFree reports whether the switch mutex, which the packet pipeline
// takes for every frame, is free.
func (s *Switch) MutexFree() bool {
	if s.mu.TryLock() {
		s.mu.Unlock()
		return true
	}
	return false
}
