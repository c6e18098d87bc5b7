//go:build !linux

package sim

// newWaker returns a runtime-timer waker (timerWaker).
func newWaker(fire func()) waker { return &timerWaker{fire: fire} }
