package dumper

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/netlumina/lumina/roce"
)

// MirrorStream generates a deterministic stream of mirror copies, as the
// injector would send them to a dumper, for tests and the benchmark: RC
// RDMA WRITE ONLY frames of one length whose mirror copy number seq carries
// sequence number seq, switch timestamp TimeBase+seq*TimeStep ns, event
// none, and a UDP source port that varies with seq (the injector's random
// port, which spreads RSS and hash fanout). The original frames (PSN
// seq mod 2^24) have a valid ICRC, so a restored copy decodes cleanly.
type MirrorStream struct {
	MirrorPort uint16
	TimeBase   uint64
	TimeStep   uint64
	spec       roce.FrameSpec
}

// Frame lengths MirrorStream can build: Ethernet + IPv4 + UDP + BTH + RETH
// + ICRC is 74 bytes, and RoCE pads payloads to 4 bytes, so lengths are
// 74+4k (130 is the smallest frame a 128-byte snap length cuts).
const minStreamFrame = 74

// NewMirrorStream returns a stream of frameLen-byte copies to mirrorPort
// (frameLen ≥ 74, frameLen ≡ 2 mod 4).
func NewMirrorStream(frameLen int, mirrorPort uint16) (*MirrorStream, error) {
	if frameLen < minStreamFrame || (frameLen-minStreamFrame)%4 != 0 {
		return nil, fmt.Errorf("%w: stream frame length %d: want 74+4k", ErrInvalidConfig, frameLen)
	}
	payload := make([]byte, frameLen-minStreamFrame)
	for i := range payload {
		payload[i] = byte(i)
	}
	return &MirrorStream{
		MirrorPort: mirrorPort,
		TimeBase:   1_700_000_000_000_000_000 & roce.MirrorTimeMask,
		TimeStep:   100,
		spec: roce.FrameSpec{
			DstMAC: [6]byte{0x02, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{0x02, 0, 0, 0, 0, 1},
			SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
			TOS: 0x02, UDPSrc: 0xC001, Opcode: roce.RCWriteOnly, DestQP: 0x11, AckReq: true,
			RETH:    roce.RETHFields{VA: 0x10000, RKey: 0x1234, Length: uint32(len(payload))},
			Payload: payload,
		},
	}, nil
}

// Original appends the frame as the sender put it on the wire.
func (s *MirrorStream) Original(dst []byte, seq uint64) []byte {
	spec := s.spec
	spec.PSN = roce.PSN(seq & 0xFFFFFF)
	out, err := spec.Append(dst)
	if err != nil {
		panic(err) // the spec is built by NewMirrorStream
	}
	return out
}

// Frame appends mirror copy seq: Original rewritten by roce.ApplyMirror.
func (s *MirrorStream) Frame(dst []byte, seq uint64) []byte {
	start := len(dst)
	dst = s.Original(dst, seq)
	src := uint16(seq*0x9E37+0x1234) | 0x8000
	roce.ApplyMirror(dst[start:], roce.MirrorMeta{Seq: seq, TimestampNs: s.TimeBase + seq*s.TimeStep}, s.MirrorPort, src)
	return dst
}

// Restored appends what a dumper writes for copy seq: Frame after
// roce.RestoreMirror.
func (s *MirrorStream) Restored(dst []byte, seq uint64) []byte {
	start := len(dst)
	dst = s.Frame(dst, seq)
	roce.RestoreMirror(dst[start:], s.MirrorPort)
	return dst
}

// Retag rewrites, in place, a frame built by Frame into copy seq, changing
// only what differs between copies of the same PSN: the MACs (timestamp and
// sequence number) and the mirror UDP source port. It is the blaster's
// cheap path; the PSN stays that of the frame it was built for.
func (s *MirrorStream) Retag(frame []byte, seq uint64) {
	ts := (s.TimeBase + seq*s.TimeStep) & roce.MirrorTimeMask
	binary.BigEndian.PutUint16(frame[0:], uint16(ts>>32))
	binary.BigEndian.PutUint32(frame[2:], uint32(ts))
	binary.BigEndian.PutUint16(frame[6:], uint16(seq>>32))
	binary.BigEndian.PutUint32(frame[8:], uint32(seq))
	binary.BigEndian.PutUint16(frame[34:], uint16(seq*0x9E37+0x1234)|0x8000)
}
