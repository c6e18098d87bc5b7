package roce

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParsePFC feeds arbitrary frames to ParseMACControl. It must not panic,
// must return one of its sentinels, and a frame it accepts must rebuild to
// the same opcode parameters.
func FuzzParsePFC(f *testing.F) {
	pfc := BuildPFC(nil, [6]byte{2, 0, 0, 0, 0, 1}, 0x09, [8]uint16{3: 0xFFFF, 5: 7})
	all := BuildPFC(nil, [6]byte{}, 0xFF, [8]uint16{0, 1, 2, 3, 4, 5, 6, 65535})
	pause := BuildPause(nil, [6]byte{2, 0, 0, 0, 0, 2}, 0xFFFF)
	tagged := append(append(append([]byte(nil), pfc[:12]...), 0x81, 0x00, 0x60, 0x64), pfc[12:]...)
	unknown := bytes.Clone(pause)
	unknown[15] = 0x02
	for _, seed := range [][]byte{pfc, all, pause, tagged, unknown, pfc[:EthernetLen+PFCLen-1],
		pause[:EthernetLen+PauseLen], pfc[:13], nil} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var m MACControlFrame
		err := ParseMACControl(frame, &m)
		switch {
		case err == nil:
		case errors.Is(err, ErrNotMACControl), errors.Is(err, ErrMACControlTruncated),
			errors.Is(err, ErrMACControlOpcode):
			_ = m.String() // must not panic on partial decodes either
			return
		default:
			t.Fatalf("ParseMACControl returned unknown error %v", err)
		}
		_ = m.String()
		var re []byte
		switch m.Opcode {
		case MACControlPFC:
			if m.EnableVector>>8 != 0 {
				return // the builder keeps the reserved octet zero
			}
			re = BuildPFC(nil, m.SrcMAC, m.Enable(), m.Time)
		case MACControlPause:
			re = BuildPause(nil, m.SrcMAC, m.PauseTime)
		default:
			t.Fatalf("accepted opcode %v", m.Opcode)
		}
		var back MACControlFrame
		if err := ParseMACControl(re, &back); err != nil {
			t.Fatalf("rebuilt frame: %v", err)
		}
		if back.Opcode != m.Opcode || back.PauseTime != m.PauseTime || back.EnableVector != m.EnableVector ||
			back.Time != m.Time || back.SrcMAC != m.SrcMAC {
			t.Fatalf("rebuilt %+v, parsed %+v", back, m)
		}
	})
}
