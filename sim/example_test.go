package sim_test

import (
	"fmt"
	"time"

	"github.com/netlumina/lumina/sim"
)

// Two ports on a 10 Gb/s link with 1 µs of delay: a 1000-byte frame spends
// 800 ns on the wire and arrives 1.8 µs after it was sent.
func Example() {
	loop := sim.NewEventLoop()
	net := sim.NewNetwork(loop)
	a, b := net.NewLink(sim.LinkConfig{BandwidthBps: 10e9, Delay: time.Microsecond})

	var nic, sw sim.Port = a, b
	sw.SetReceiver(func(frame []byte) {
		fmt.Printf("%s got %d bytes at %d ns\n", sw.Name(), len(frame), loop.Now())
		sw.Send(frame[:64]) // reply; Send copies, so reusing the frame is fine
	})
	nic.SetReceiver(func(frame []byte) {
		fmt.Printf("%s got %d bytes at %d ns\n", nic.Name(), len(frame), loop.Now())
	})
	nic.Send(make([]byte, 1000))
	loop.Run()
	fmt.Printf("%+v\n", a.Stats())
	// Output:
	// link0/b got 1000 bytes at 1800 ns
	// link0/a got 64 bytes at 2852 ns
	// {TxFrames:1 TxBytes:1000 RxFrames:1 RxBytes:64 DroppedHook:0 DroppedQueue:0 DroppedMTU:0 RxDropped:0}
}
