package roce

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestMACMirrorRoundTrip(t *testing.T) {
	pfc := BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x08, [8]uint16{3: 65535})
	b := AppendMACMirror([]byte{0xEE}, MirrorMeta{Seq: 0x0102030405, TimestampNs: 0xA0B0C0D0E0F0, Event: EventPause}, true, 7, pfc)
	want := "ee" + "a0b0c0d0e0f0" + "000102030405" + "88b5" + "07" + "01" + "0007"
	if got := hex.EncodeToString(b[:1+MACMirrorHeaderLen]); got != want {
		t.Fatalf("header %s, want %s", got, want)
	}
	var m MACMirror
	if err := ParseMACMirror(b[1:], &m); err != nil {
		t.Fatal(err)
	}
	if m.Seq != 0x0102030405 || m.TimestampNs != 0xA0B0C0D0E0F0 || m.Event != EventPause || !m.Sent || m.Port != 7 || !bytes.Equal(m.Frame, pfc) {
		t.Errorf("ParseMACMirror = %+v", m)
	}
	if err := ParseMACMirror(pfc, &m); err != ErrNotMACMirror {
		t.Errorf("ParseMACMirror(a PFC frame) = %v, want ErrNotMACMirror", err)
	}
	if err := ParseMACMirror(b[1:20], &m); err != ErrNotMACMirror {
		t.Errorf("ParseMACMirror(short) = %v, want ErrNotMACMirror", err)
	}
}
