package softrnic

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
)

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// TestLosslessTransfers moves N messages of each verb and checks memory.
func TestLosslessTransfers(t *testing.T) {
	const msgs, size = 5, 10000 // 10 packets at MTU 1024 (last one 784 B, not a multiple of 4)
	for _, op := range []WROpcode{WRWrite, WRWriteImm, WRSend, WRSendImm, WRRead} {
		t.Run(op.String(), func(t *testing.T) {
			p := newPair(t, pairOpts{})
			fill(p.reqMR.Buf, 1)
			fill(p.rspMR.Buf, 2)
			wantReq, wantRsp := append([]byte(nil), p.reqMR.Buf...), append([]byte(nil), p.rspMR.Buf...)
			for i := range msgs {
				off := i * size
				if op == WRSend || op == WRSendImm || op == WRWriteImm {
					if err := p.rs.PostRecv(RecvWR{ID: uint64(100 + i), MR: p.rspMR, Offset: off, Length: size}); err != nil {
						t.Fatal(err)
					}
				}
				wr := SendWR{ID: uint64(i), Op: op, Local: p.reqMR, Offset: off, Length: size,
					RemoteAddr: p.rspMR.Addr + uint64(off), RKey: p.rspMR.RKey, Imm: 0xABC0 + uint32(i)}
				if err := p.rq.PostSend(wr); err != nil {
					t.Fatal(err)
				}
				if op == WRRead {
					copy(wantReq[off:off+size], wantRsp[off:off+size])
				} else {
					copy(wantRsp[off:off+size], wantReq[off:off+size])
				}
			}
			p.run(time.Second)
			if !bytes.Equal(p.reqMR.Buf, wantReq) || !bytes.Equal(p.rspMR.Buf, wantRsp) {
				t.Fatal("memory after transfer differs from expected")
			}
			var sends, recvs int
			for _, c := range p.comps {
				if c.Status != StatusSuccess {
					t.Errorf("completion %+v", c)
				}
				switch c.QPN {
				case p.rq.QPN():
					if c.WRID != uint64(sends) || c.ByteLen != size {
						t.Errorf("requester completion %d = %+v", sends, c)
					}
					sends++
				case p.rs.QPN():
					if c.HasImm != (op != WRSend) || c.HasImm && c.Imm != 0xABC0+uint32(recvs) {
						t.Errorf("receive completion %d = %+v", recvs, c)
					}
					recvs++
				}
			}
			wantRecvs := 0
			if op == WRSend || op == WRSendImm || op == WRWriteImm {
				wantRecvs = msgs
			}
			if sends != msgs || recvs != wantRecvs {
				t.Errorf("completions: %d send, %d recv; want %d, %d", sends, recvs, msgs, wantRecvs)
			}
			// Every data PSN appears once, in order: no retransmission.
			var next int = 0
			for _, f := range p.frames {
				if f.Round != 1 {
					t.Errorf("retransmission on a lossless link: %v", f)
				}
				if f.Op.IsAck() || !f.Op.IsData() {
					continue
				}
				if op == WRRead && f.Op.IsReadRequest() {
					continue
				}
				if int(f.PSN) != next {
					t.Errorf("data PSN %d, want %d", f.PSN, next)
				}
				next++
			}
			if next != msgs*10 {
				t.Errorf("%d data packets, want %d", next, msgs*10)
			}
		})
	}
}

// TestStaleNAKCounted: a NAK (PSN sequence error) that reaches the
// requester after an ACK covered its PSN — the responder's second NAK of a
// reorder, sent late — starts no retry but is a received NAK sequence
// error packet: packet_seq_err counts it, as the counters analyzer counts
// every NAK delivered.
func TestStaleNAKCounted(t *testing.T) {
	p := newPair(t, pairOpts{})
	if err := p.rq.PostSend(SendWR{ID: 1, Op: WRWrite, Local: p.reqMR, Length: 4096, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey}); err != nil {
		t.Fatal(err)
	}
	p.run(time.Second)
	if len(p.comps) != 1 || p.comps[0].Status != StatusSuccess || p.req.ctr.PacketSeqErr != 0 {
		t.Fatalf("completions %+v, packet_seq_err %d; want one success and 0", p.comps, p.req.ctr.PacketSeqErr)
	}
	sent := len(p.frames)
	spec := roce.FrameSpec{DstMAC: p.req.MAC(), SrcMAC: p.rsp.MAC(), SrcIP: p.rsp.IPs()[0], DstIP: p.req.IPs()[0], UDPSrc: 0xC000,
		Opcode: roce.RCAcknowledge, DestQP: p.rq.QPN(), PSN: p.rq.PSN().Add(1),
		AETH: roce.AETHFields{Syndrome: roce.NAKSyndrome(roce.NAKPSNSequenceError), MSN: 1}}
	frame, err := spec.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	var pk roce.Packet
	if err := (&roce.Parser{}).Parse(frame, len(frame), &pk); err != nil {
		t.Fatal(err)
	}
	p.loop.Post(func() { p.rq.requesterReceive(&pk) })
	p.run(time.Second)
	if p.req.ctr.PacketSeqErr != 1 || len(p.frames) != sent || len(p.comps) != 1 {
		t.Errorf("after a stale NAK: packet_seq_err %d, %d frames sent (want %d: no retry), %d completions",
			p.req.ctr.PacketSeqErr, len(p.frames), sent, len(p.comps))
	}
}
