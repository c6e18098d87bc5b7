package generator

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
)

// FuzzRecv feeds bytes to the control protocol's reader (the responder's
// and the requester's side of ctl) over an in-memory connection. recv must
// never panic or hang (a deadline bounds it); a failure returns an error
// that wraps ErrProtocol or names the peer; an accepted message re-encodes
// to a line that decodes to the same message.
func FuzzRecv(f *testing.F) {
	for _, m := range []message{
		{Hello: &hello{Version: protocolVersion, Traffic: Traffic{}, QPs: []Endpoint{{IP: netip.MustParseAddr("10.0.0.1"), MAC: roce.MAC{2, 0, 0, 0, 0, 1}, QPN: 17, IPSN: 100}}}},
		{Ready: &ready{QPs: []Endpoint{{IP: netip.MustParseAddr("10.0.0.2"), MAC: roce.MAC{2, 0, 0, 0, 0, 2}, QPN: 18, IPSN: 5, Addr: 4096, RKey: 7, Len: 1 << 20}}}},
		{Complete: &complete{OK: true}},
		{Bye: &ResponderStats{}},
		{Error: "no such device"},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, '\n'))
	}
	f.Add([]byte("{}\n"))
	f.Add([]byte("{\"hello\": 1}\n"))
	f.Add([]byte("not json\n"))
	f.Add([]byte("{\"complete\": {\"ok\": true}}")) // no newline: EOF
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := net.Pipe()
		defer a.Close()
		go func() {
			b.SetWriteDeadline(time.Now().Add(2 * time.Second))
			b.Write(data)
			b.Close()
		}()
		c := newCtl(a)
		m, err := c.recv(time.Now().Add(2 * time.Second))
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("recv timed out on %d bytes", len(data))
			}
			if !errors.Is(err, ErrProtocol) && !strings.HasPrefix(err.Error(), "generator: ") {
				t.Fatalf("recv error %q is malformed", err)
			}
			if !reflect0(m) {
				t.Fatalf("recv returned a message and an error")
			}
			return
		}
		if m.Error != "" {
			t.Fatalf("recv accepted an error message %q", m.Error)
		}
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal of an accepted message: %v", err)
		}
		var m2 message
		if err := json.Unmarshal(line, &m2); err != nil {
			t.Fatalf("re-decoding %s: %v", line, err)
		}
		line2, _ := json.Marshal(m2)
		if !bytes.Equal(line, line2) {
			t.Fatalf("round trip differs:\n%s\n%s", line, line2)
		}
	})
}

func reflect0(m message) bool {
	return m.Hello == nil && m.Ready == nil && m.Complete == nil && m.Bye == nil && m.Error == ""
}
