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

// TimedPort is a Port that knows when each frame arrived, as opposed to
// when its Loop got round to delivering it. On a real-time testbed the two
// differ by however late the loop runs (a RealLoop under CPU load can run
// milliseconds behind), so a component that timestamps frames — the
// switch's mirror copies — takes the arrival time from a TimedPort when its
// port is one.
//
// *AFPacketPort implements it with the kernel's receive timestamps. Link
// Endpoints do not: on virtual time a frame is delivered at the instant it
// arrives, so Loop.Now in the receive callback is its arrival time.
type TimedPort interface {
	Port

	// SetTimedReceiver is SetReceiver with each frame's arrival time rxNs,
	// on the port's Loop clock (Loop.Now units, never after Loop.Now when
	// fn runs). It replaces a receiver set by SetReceiver, and SetReceiver
	// replaces it. A nil fn discards received frames (they are counted).
	SetTimedReceiver(fn func(frame []byte, rxNs int64))
}

// TxTimedPort is a Port that knows when a frame it sent left, as opposed
// to when its write returned: on a real-time testbed a write can take
// milliseconds after the frame left (the kernel runs pending receive work
// in it). The switch stamps the mirror copy of a frame it sends (a PFC
// pause) with the departure when its port tells it.
//
// *AFPacketPort implements it with the kernel's software transmit
// timestamps. Link Endpoints do not: on virtual time a write takes no time.
type TxTimedPort interface {
	Port

	// SendTimed sends frame as Send does and returns when it left, on the
	// port's Loop clock (never after Loop.Now when it returns); ok is false
	// when the departure is not known (the frame may still have been
	// sent).
	SendTimed(frame []byte) (txNs int64, ok bool)
}

// ErrClosed is returned by operations on a closed Network.
var ErrClosed = errors.New("sim: closed")
