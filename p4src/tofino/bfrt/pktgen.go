package bfrt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/netlumina/lumina/roce"

	pb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
)

// Chip is the Tofino generation: it decides the pktgen port of a pipe,
// the number of apps and the fields an app takes.
type Chip int

// Chips.
const (
	Tofino1 Chip = 1
	Tofino2 Chip = 2
)

// Pktgen limits (docs/tofino.md §8: PIPE_MGR_TOF_PKTGEN_APP_CNT 8,
// PIPE_MGR_TOF2_PKTGEN_APP_CNT 16 in open-p4studio's pipe_mgr; a 16 KB
// template buffer of 1024 16-byte lines per pipe, tna_pktgen's test.py).
const (
	bufferBytes = 16 * 1024
	bufferLine  = 16
	// PauseGenLen is the length of lumina's pause_gen_h, the template's
	// first 2 bytes, before the PFC frame: 2 bits of padding, the logical
	// switch (5 bits) and the egress port (9 bits), big-endian.
	PauseGenLen = 2
	// TemplateLen is a pause template's length: pause_gen_h and the
	// 60-byte PFC frame (the hardware adds its 6-byte pktgen header in
	// front and the 4-byte FCS behind).
	TemplateLen = PauseGenLen + roce.MACControlMinLen
)

// Apps is the number of pktgen apps per pipe.
func (c Chip) Apps() int {
	if c == Tofino2 {
		return 16
	}
	return 8
}

// DefaultPktgenPort is the pipe-local pktgen port lumina uses unless told
// otherwise, lumina.p4's LUMINA_PKTGEN_PORT default: 68 on Tofino 1 (the
// pktgen ports 68–71 of every pipe) and 6 on Tofino 2 (pktgen channels
// 0–7; tna_pktgen's test.py uses 6, which exists in every pipe). The two
// sides must agree (docs/tofino.md §8): a program built with
// -DLUMINA_PKTGEN_PORT=N needs `lumina run --pktgen-port N`.
func (c Chip) DefaultPktgenPort() uint32 {
	if c == Tofino2 {
		return 6
	}
	return 68
}

// CheckPktgenPort refuses a pipe-local port that is not a pktgen port of
// c: 68–71 on Tofino 1, 0–7 on Tofino 2 (the channel an app is assigned
// to, bf_pktgen_tof2_cfg's assigned_chnl_id "legal value: 0-7").
func (c Chip) CheckPktgenPort(local uint32) error {
	if c == Tofino2 && local > 7 {
		return fmt.Errorf("%w: pktgen port %d: Tofino 2's pktgen ports are 0..7 of a pipe", ErrPause, local)
	}
	if c != Tofino2 && (local < 68 || local > 71) {
		return fmt.Errorf("%w: pktgen port %d: Tofino 1's pktgen ports are 68..71 of a pipe", ErrPause, local)
	}
	return nil
}

// PktgenPort is the device port of pipe's default pktgen port
// (DefaultPktgenPort, the pipe in bits 8:7).
func (c Chip) PktgenPort(pipe uint32) uint32 { return pipe<<7 | c.DefaultPktgenPort() }

// usableApp reports whether lumina uses app id a. Generated packets arrive
// on the pktgen port, which on Tofino 1 is also the recirculation port by
// default (68), where lumina.p4 tells them from held packets by the first
// byte: a
// hold_h's kind is 1, 2 or 3, a pktgen timer header's first byte is
// pipe << 3 | app (Tofino 1) or pipe << 4 | app (Tofino 2). Apps 1–3 are
// therefore never used, in any pipe.
func usableApp(a int) bool { return a == 0 || a > 3 }

// Pause is one pause injection (traffic.pfc-events type pause, the
// software switch's injector.PauseInjection) on a Tofino.
type Pause struct {
	Port     uint32 // device port of the host: the frames leave from it
	Switch   uint8  // its logical switch (0 without a fabric): the mirror sequence's
	Priority int
	Quanta   uint16
	// First frame at Start after the app is enabled, then one every
	// Interval while (index × Interval) < Duration.
	Start, Duration, Interval time.Duration
	SrcMAC                    [6]byte // the PFC frames' source MAC
}

// Frames is the number of frames p sends: the N of k × Interval <
// Duration, k = 0..N−1 (1 for a zero Duration or Interval).
func (p Pause) Frames() int64 {
	if p.Interval <= 0 || p.Duration <= 0 {
		return 1
	}
	return int64((p.Duration + p.Interval - 1) / p.Interval)
}

// Template is the bytes lumina writes into the pktgen buffer for p:
// pause_gen_h (switch, port) and the PFC frame the software switch sends
// (roce.BuildPFC: only Priority enabled, time[Priority] = Quanta).
func (p Pause) Template() []byte {
	b := make([]byte, PauseGenLen, TemplateLen)
	binary.BigEndian.PutUint16(b, uint16(p.Switch&0x1F)<<9|uint16(p.Port&0x1FF))
	var t [roce.PFCPriorities]uint16
	t[p.Priority] = p.Quanta
	return roce.BuildPFC(b, p.SrcMAC, 1<<p.Priority, t)
}

// ErrPause is wrapped by errors about a pause that pktgen cannot send.
var ErrPause = errors.New("bfrt: pause")

// Write is one BfRt write of a plan.
type Write struct {
	Type  pb.Update_Type
	Entry Entry
}

// PausePlan is the packet generator's configuration for a test's pauses,
// in the order it is written: per pipe used, the pktgen port's enable; per
// pause, its template in the pipe's buffer and its app, written disabled;
// then (Enable) every app enabled, which starts the timers. The order is
// open-p4studio's tna_pktgen example's (test.py: "enable packet
// generation on the generator port, program the packet into the packet
// buffer, configure the application; enabling it should be done last").
type PausePlan struct {
	Setup  []Write
	Enable []Write
	// Apps is each pause's (pipe, app id), in the order of the pauses.
	Apps []PipeApp
}

// PipeApp is a pktgen app of a pipe.
type PipeApp struct{ Pipe, App uint32 }

// PlanPauses lays out pauses on chip. Each pause gets an app of its host
// port's pipe (the pipe's generator injects into that pipe's ingress; the
// program sends the frame out of the port), a one-shot timer app:
// timer_nanosec = Start (counted from the enable), batch_count_cfg = N − 1
// batches of packets_per_batch_cfg = 0 + 1 packet, ibg = Interval (the
// pktgen counts are zero-based, tna_pktgen's test.py). A one-shot app
// stops by itself after N frames; a periodic one would fire every
// Interval until the control plane disabled it, which would put the
// count back in software's timing.
func PlanPauses(chip Chip, pauses []Pause) (*PausePlan, error) {
	return PlanPausesOn(chip, chip.DefaultPktgenPort(), pauses)
}

// PlanPausesOn is PlanPauses with the pipe-local pktgen port local
// (lumina.p4's LUMINA_PKTGEN_PORT): each pipe's generator is enabled on
// its port local, and each app's packets enter the pipe there
// (pipe_local_source_port), where lumina.p4 parses them as generated
// pauses.
func PlanPausesOn(chip Chip, local uint32, pauses []Pause) (*PausePlan, error) {
	if err := chip.CheckPktgenPort(local); err != nil {
		return nil, err
	}
	plan := &PausePlan{}
	type pipeState struct {
		nextApp int
		offset  int
	}
	pipes := map[uint32]*pipeState{}
	for i, p := range pauses {
		switch {
		case p.Priority < 0 || p.Priority >= roce.PFCPriorities:
			return nil, fmt.Errorf("%w %d: priority %d out of range 0..7", ErrPause, i, p.Priority)
		case p.Start < 0 || p.Duration < 0 || p.Interval < 0:
			return nil, fmt.Errorf("%w %d: negative time", ErrPause, i)
		case p.Duration > 0 && p.Interval == 0:
			return nil, fmt.Errorf("%w %d: duration %v with no interval", ErrPause, i, p.Duration)
		case p.Port > 0x1FF:
			return nil, fmt.Errorf("%w %d: port %d is not a 9-bit device port", ErrPause, i, p.Port)
		}
		n := p.Frames()
		if n > 1<<16 {
			return nil, fmt.Errorf("%w %d: %d frames, more than the 65536 batches of one app", ErrPause, i, n)
		}
		for _, d := range []time.Duration{p.Start, p.Interval} {
			if d.Nanoseconds() > 1<<32-1 {
				return nil, fmt.Errorf("%w %d: %v is beyond the generator's 32-bit nanosecond timer", ErrPause, i, d)
			}
		}
		pipe := p.Port >> 7
		st := pipes[pipe]
		if st == nil {
			st = &pipeState{}
			pipes[pipe] = st
			plan.Setup = append(plan.Setup, Write{pb.Update_MODIFY, Entry{Table: "pktgen.port_cfg",
				Keys: []KV{{"dev_port", uint64(pipe<<7 | local)}},
				Data: []KV{{"pktgen_enable", true}}}})
		}
		for st.nextApp < chip.Apps() && !usableApp(st.nextApp) {
			st.nextApp++
		}
		if st.nextApp >= chip.Apps() {
			return nil, fmt.Errorf("%w %d: pipe %d has no free pktgen app (lumina uses apps 0 and 4..%d)", ErrPause, i, pipe, chip.Apps()-1)
		}
		app := st.nextApp
		st.nextApp++
		tmpl := p.Template()
		off := st.offset
		st.offset += (len(tmpl) + bufferLine - 1) / bufferLine * bufferLine
		if st.offset > bufferBytes {
			return nil, fmt.Errorf("%w %d: pipe %d's 16 KB pktgen buffer is full", ErrPause, i, pipe)
		}
		pp := pipe
		plan.Setup = append(plan.Setup, Write{pb.Update_MODIFY, Entry{Table: "pktgen.pkt_buffer", Pipe: &pp,
			Keys: []KV{{"pkt_buffer_offset", uint64(off)}, {"pkt_buffer_size", uint64(len(tmpl))}},
			Data: []KV{{"buffer", tmpl}}}})
		data := []KV{
			{"timer_nanosec", uint64(p.Start.Nanoseconds())},
			{"pkt_len", uint64(len(tmpl))},
			{"pkt_buffer_offset", uint64(off)},
			{"pipe_local_source_port", uint64(local)},
			{"batch_count_cfg", uint64(n - 1)},
			{"packets_per_batch_cfg", uint64(0)},
			{"ibg", uint64(p.Interval.Nanoseconds())},
			{"ipg", uint64(0)},
			{"trigger_counter", uint64(0)},
			{"batch_counter", uint64(0)},
			{"pkt_counter", uint64(0)},
			{"app_enable", false},
		}
		if chip == Tofino2 {
			// Each app names its pktgen channel on Tofino 2 (test.py).
			data = append(data, KV{"assigned_chnl_id", uint64(local)})
		}
		key := []KV{{"app_id", uint64(app)}}
		plan.Setup = append(plan.Setup, Write{pb.Update_MODIFY, Entry{Table: "pktgen.app_cfg", Pipe: &pp, Keys: key,
			Action: "trigger_timer_one_shot", Data: data}})
		plan.Enable = append(plan.Enable, Write{pb.Update_MODIFY, Entry{Table: "pktgen.app_cfg", Pipe: &pp, Keys: key,
			Data: []KV{{"app_enable", true}}}})
		plan.Apps = append(plan.Apps, PipeApp{pipe, uint32(app)})
	}
	// The enables of one pipe go together (EnableRequests: a request has
	// one target pipe), the pipes in the order the pauses first use them.
	first := map[uint32]int{}
	for i, a := range plan.Apps {
		if _, ok := first[a.Pipe]; !ok {
			first[a.Pipe] = i
		}
	}
	sort.SliceStable(plan.Enable, func(i, j int) bool {
		return first[*plan.Enable[i].Entry.Pipe] < first[*plan.Enable[j].Entry.Pipe]
	})
	return plan, nil
}

// BatchRequests are the requests WriteBatch sends for ws: consecutive
// writes with the same target pipe go in one WriteRequest, as its
// updates in order (a WriteRequest has one target; bf_rt applies its
// updates one after the other, bfruntime.proto's WriteRequest).
func (c *Client) BatchRequests(ws []Write) ([]*pb.WriteRequest, error) {
	var out []*pb.WriteRequest
	samePipe := func(a, b *uint32) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	var last *uint32
	for i, w := range ws {
		req, err := c.WriteRequest(w.Type, w.Entry)
		if err != nil {
			return nil, err
		}
		if i > 0 && samePipe(last, w.Entry.Pipe) {
			r := out[len(out)-1]
			r.Updates = append(r.Updates, req.Updates...)
		} else {
			out = append(out, req)
		}
		last = w.Entry.Pipe
	}
	return out, nil
}

// WriteBatch writes ws with BatchRequests' requests: the plan's Enable,
// all of a pipe's apps in one request, so that their timers start
// together and not one round trip apart.
func (c *Client) WriteBatch(ctx context.Context, ws []Write) error {
	reqs, err := c.BatchRequests(ws)
	if err != nil {
		return err
	}
	for _, req := range reqs {
		resp, err := c.rt.Write(ctx, req)
		if err != nil {
			return fmt.Errorf("bfrt: %d updates from %s: %w", len(req.Updates), ws[0].Entry.Table, err)
		}
		for i, st := range resp.GetStatus() {
			if st.GetCanonicalCode() != int32(codes.OK) {
				return fmt.Errorf("bfrt: update %d of %d: %s (code %d)", i, len(req.Updates), st.GetMessage(), st.GetCanonicalCode())
			}
		}
	}
	return nil
}

// Apply writes the plan: Setup, then Enable (the timers start there).
func (c *Client) Apply(ctx context.Context, ws ...[]Write) error {
	for _, list := range ws {
		for _, w := range list {
			if err := c.Write(ctx, w.Type, w.Entry); err != nil {
				return err
			}
		}
	}
	return nil
}

// DisableApps writes app_enable false for every app of plan (the clean-up:
// a one-shot app stays enabled after it fired, test.py).
func (c *Client) DisableApps(ctx context.Context, plan *PausePlan) error {
	var first error
	for _, a := range plan.Apps {
		pipe := a.Pipe
		err := c.Write(ctx, pb.Update_MODIFY, Entry{Table: "pktgen.app_cfg", Pipe: &pipe,
			Keys: []KV{{"app_id", uint64(a.App)}}, Data: []KV{{"app_enable", false}}})
		if first == nil {
			first = err
		}
	}
	return first
}
