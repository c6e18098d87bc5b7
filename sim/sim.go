package sim

import (
	"errors"
	"time"
)

// Loop runs callbacks one at a time and tells the time. Components never
// call time.Now; they ask their Loop.
//
// Implementations: *EventLoop (virtual time, deterministic) and *RealLoop
// (wall-clock time, one goroutine).
type Loop interface {
	// Now returns nanoseconds since the loop's epoch. It never decreases.
	Now() int64

	// AfterFunc arranges for f to run on the loop after d. A d <= 0 means
	// as soon as possible, after work that is already due. The returned
	// Timer cancels the call.
	AfterFunc(d time.Duration, f func()) Timer

	// Post arranges for f to run on the loop as soon as possible, after
	// work that is already due. It is safe to call from any goroutine.
	Post(f func())
}

// Timer is a pending call made by Loop.AfterFunc.
type Timer interface {
	// Stop cancels the call. It returns true if the call stopped the timer
	// before its function ran, and false if the function already ran (or
	// is running) or the timer was already stopped.
	Stop() bool
}

// Port is one end of a link: a NIC port, a switch port.
type Port interface {
	// Send queues a frame for transmission. The port copies the frame, so
	// the caller may reuse the buffer as soon as Send returns.
	Send(frame []byte)

	// SetReceiver sets the function that runs on the Loop for each
	// received frame. The frame is valid only during the call: copy it to
	// keep it. A nil fn discards received frames (they are counted).
	SetReceiver(fn func(frame []byte))

	// Name returns the port's name, for logs and traces.
	Name() string
}

// ErrClosed is returned by operations on a closed Network.
var ErrClosed = errors.New("sim: closed")
