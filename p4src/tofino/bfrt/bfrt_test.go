package bfrt_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	"github.com/netlumina/lumina/p4src/tofino/bfrt/bfrtfake"
	pb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
)

// The pause of examples/pause-reaction.yaml on a requester at device port
// 144 (pipe 1): priority 3, 65535 quanta, from 20 µs for 200 µs, every
// 20 µs: 10 frames.
var examplePause = bfrt.Pause{Port: 144, Priority: 3, Quanta: 65535, Start: 20 * time.Microsecond,
	Duration: 200 * time.Microsecond, Interval: 20 * time.Microsecond, SrcMAC: [6]byte{2, 0, 0, 0, 0, 0xee}}

func connect(t *testing.T, chip bfrt.Chip) (*bfrt.Client, *bfrtfake.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv := &bfrtfake.Server{Chip: chip}
	c, done, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	return c, srv
}

// Hand-written protobuf encoding, independent of the generated code: the
// field numbers are bfruntime.proto's.
func varint(num protowire.Number, v uint64) []byte {
	if v == 0 {
		return nil
	}
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}
func lenField(num protowire.Number, parts ...[]byte) []byte {
	b := bytes.Join(parts, nil)
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// writeRequest: WriteRequest{target = 1 {device_id 1, pipe_id 2,
// direction 3, prsr_id 4}, client_id = 2, updates = 3 {type 1, entity 2
// {table_entry 1 {table_id 1, key 2 {fields 1 {field_id 1, exact 2 {value
// 1}}}, data 3 {action_id 1, fields 2 {field_id 1, stream 2 | bool_val
// 8}}}}}, p4_name = 5}.
func writeRequest(pipe uint64, table uint64, keys [][]byte, data []byte) []byte {
	var kb []byte
	for i, k := range keys {
		kb = append(kb, lenField(1, varint(1, uint64(i+1)), lenField(2, lenField(1, k)))...)
	}
	// protobuf-go writes a message's oneof fields after its other fields
	// (TableEntry's key, field 2, after its data, field 3).
	te := cat(varint(1, table), lenField(3, data), lenField(2, kb))
	return cat(lenField(1, varint(2, pipe), varint(3, 0xFF), varint(4, 0xFF)), varint(2, 1),
		lenField(3, varint(1, uint64(pb.Update_MODIFY)), lenField(2, lenField(1, te))), lenField(5, []byte("lumina")))
}

func stream(id uint64, b ...byte) []byte { return lenField(2, varint(1, id), lenField(2, b)) }
func boolean(id uint64, v bool) []byte {
	f := protowire.AppendTag(nil, 8, protowire.VarintType)
	f = protowire.AppendVarint(f, protowire.EncodeBool(v))
	return lenField(2, varint(1, id), f)
}

// TestPauseWritesTofino1 checks the plan of the example's pause, write by
// write, and each request byte for byte against a hand encoding.
func TestPauseWritesTofino1(t *testing.T) {
	c, _ := connect(t, bfrt.Tofino1)
	plan, err := bfrt.PlanPauses(bfrt.Tofino1, []bfrt.Pause{examplePause})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := examplePause.Template()
	// pause_gen_h: switch 0, port 144; then the PFC frame: DA
	// 01:80:c2:00:00:01, SA, 0x8808, opcode 0x0101, enable 0x0008,
	// time[3] = 0xffff, zero padding to 60 bytes.
	wantTmpl := "0090" + "0180c2000001" + "0200000000ee" + "8808" + "0101" + "0008" +
		"000000000000" + "ffff" + "0000000000000000" + strings.Repeat("00", 26)
	if hex.EncodeToString(tmpl) != wantTmpl {
		t.Fatalf("template\n %x\nwant\n %s", tmpl, wantTmpl)
	}
	u32 := func(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
	want := [][]byte{
		// pktgen.port_cfg (0xff020001) dev_port 196 = pipe 1's port 68: pktgen_enable (2) true.
		writeRequest(0xFFFF, 0xFF020001, [][]byte{u32(196)}, boolean(2, true)),
		// pktgen.pkt_buffer (0xff020003), pipe 1, offset 0, size 62: buffer (1) = the template.
		writeRequest(1, 0xFF020003, [][]byte{u32(0), u32(62)}, stream(1, tmpl...)),
		// pktgen.app_cfg (0xff020002), pipe 1, app 0: trigger_timer_one_shot (1), disabled.
		writeRequest(1, 0xFF020002, [][]byte{u32(0)}, cat(varint(1, 1),
			stream(1, u32(20000)...),           // timer_nanosec 20 µs
			stream(13, 0, 62),                  // pkt_len
			stream(14, 0, 0),                   // pkt_buffer_offset
			stream(15, u32(68)...),             // pipe_local_source_port: the packets enter on pipe 1's port 68
			stream(17, 0, 9),                   // batch_count_cfg: 10 frames − 1
			stream(18, 0, 0),                   // packets_per_batch_cfg: 1 − 1
			stream(19, u32(20000)...),          // ibg 20 µs
			stream(21, 0, 0, 0, 0),             // ipg
			stream(25, 0, 0, 0, 0, 0, 0, 0, 0), // trigger_counter
			stream(23, 0, 0, 0, 0, 0, 0, 0, 0), // batch_counter
			stream(24, 0, 0, 0, 0, 0, 0, 0, 0), // pkt_counter
			boolean(12, false))),               // app_enable
		// Then the enable: app_enable true, no action.
		writeRequest(1, 0xFF020002, [][]byte{u32(0)}, boolean(12, true)),
	}
	all := append(append([]bfrt.Write(nil), plan.Setup...), plan.Enable...)
	if len(all) != len(want) {
		t.Fatalf("%d writes, want %d", len(all), len(want))
	}
	for i, w := range all {
		req, err := c.WriteRequest(w.Type, w.Entry)
		if err != nil {
			t.Fatal(err)
		}
		got, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Errorf("write %d (%s):\n got %x\nwant %x", i, w.Entry.Table, got, want[i])
		}
	}
	if len(plan.Apps) != 1 || plan.Apps[0] != (bfrt.PipeApp{Pipe: 1, App: 0}) {
		t.Errorf("apps %v, want pipe 1 app 0", plan.Apps)
	}
}

// TestPauseWritesTofino2: port 6 of the pipe, 16-bit byte fields, the
// app's channel, and apps 1–3 never used.
func TestPauseWritesTofino2(t *testing.T) {
	c, _ := connect(t, bfrt.Tofino2)
	p2 := examplePause
	p2.Port = 8 // pipe 0
	plan, err := bfrt.PlanPauses(bfrt.Tofino2, []bfrt.Pause{examplePause, p2, p2, p2})
	if err != nil {
		t.Fatal(err)
	}
	var ports, apps []uint64
	for _, w := range plan.Setup {
		req, err := c.WriteRequest(w.Type, w.Entry)
		if err != nil {
			t.Fatalf("%s: %v", w.Entry.Table, err)
		}
		te := req.GetUpdates()[0].GetEntity().GetTableEntry()
		switch w.Entry.Table {
		case "pktgen.port_cfg":
			ports = append(ports, w.Entry.Keys[0].Val.(uint64))
		case "pktgen.app_cfg":
			apps = append(apps, uint64(req.GetTarget().GetPipeId())<<8|w.Entry.Keys[0].Val.(uint64))
			var chnl []byte
			for _, f := range te.GetData().GetFields() {
				if f.GetFieldId() == 28 {
					chnl = f.GetStream()
				}
			}
			if !bytes.Equal(chnl, []byte{6}) {
				t.Errorf("assigned_chnl_id %x, want 06", chnl)
			}
		}
	}
	if want := []uint64{128 | 6, 6}; !equal(ports, want) {
		t.Errorf("pktgen ports %v, want %v", ports, want)
	}
	if want := []uint64{1 << 8, 0, 4, 5}; !equal(apps, want) {
		t.Errorf("apps (pipe<<8|app) %v, want %v", apps, want)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPlanLimits: five pauses on one Tofino 1 pipe fit (apps 0, 4..7), a
// sixth does not; too many frames, a 33-bit timer and a bad priority are
// refused.
func TestPlanLimits(t *testing.T) {
	five := []bfrt.Pause{examplePause, examplePause, examplePause, examplePause, examplePause}
	if _, err := bfrt.PlanPauses(bfrt.Tofino1, five); err != nil {
		t.Errorf("five pauses: %v", err)
	}
	for _, tc := range []struct {
		name   string
		pauses []bfrt.Pause
		want   string
	}{
		{"six", append(five, examplePause), "pipe 1 has no free pktgen app"},
		{"frames", []bfrt.Pause{{Port: 1, Priority: 3, Duration: time.Second, Interval: time.Microsecond}}, "more than the 65536 batches"},
		{"timer", []bfrt.Pause{{Port: 1, Priority: 3, Start: 5 * time.Second}}, "32-bit nanosecond timer"},
		{"priority", []bfrt.Pause{{Port: 1, Priority: 8}}, "priority 8 out of range"},
	} {
		if _, err := bfrt.PlanPauses(bfrt.Tofino1, tc.pauses); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestErrorsNameTableAndField: lookups and values that do not fit say
// which table and field.
func TestErrorsNameTableAndField(t *testing.T) {
	c, _ := connect(t, bfrt.Tofino1)
	for _, tc := range []struct {
		e    bfrt.Entry
		want string
	}{
		{bfrt.Entry{Table: "pktgen.nope"}, "no table pktgen.nope"},
		{bfrt.Entry{Table: "pktgen.app_cfg", Keys: []bfrt.KV{{"app", uint64(1)}}}, "table tf1.pktgen.app_cfg has no key field app"},
		{bfrt.Entry{Table: "pktgen.app_cfg", Keys: []bfrt.KV{{"app_id", uint64(1)}}, Action: "trigger_timer_one_shot",
			Data: []bfrt.KV{{"pkt_len", uint64(70000)}}}, "table tf1.pktgen.app_cfg field pkt_len: 70000 does not fit in 16 bits"},
		{bfrt.Entry{Table: "pktgen.app_cfg", Keys: []bfrt.KV{{"app_id", uint64(1)}}, Data: []bfrt.KV{{"timer_nanosec", uint64(1)}}},
			"table tf1.pktgen.app_cfg has no data field timer_nanosec"},
		{bfrt.Entry{Table: "$PORT", Keys: []bfrt.KV{{"$DEV_PORT", uint64(1)}}, Data: []bfrt.KV{{"$PORT_ENABLE", uint64(1)}}},
			"table $PORT field $PORT_ENABLE: 1 (uint64) for a bool field"},
	} {
		if _, err := c.WriteRequest(pb.Update_MODIFY, tc.e); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.e, err, tc.want)
		}
	}
}

// TestReadBack: what was written reads back by name.
func TestReadBack(t *testing.T) {
	c, _ := connect(t, bfrt.Tofino1)
	ctx := context.Background()
	plan, err := bfrt.PlanPauses(bfrt.Tofino1, []bfrt.Pause{examplePause})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, plan.Setup); err != nil {
		t.Fatal(err)
	}
	pipe := uint32(1)
	es, err := c.Read(ctx, bfrt.Entry{Table: "pktgen.app_cfg", Pipe: &pipe, Keys: []bfrt.KV{{"app_id", uint64(0)}}}, 4)
	if err != nil || len(es) != 1 {
		t.Fatalf("read: %v, %d entries", err, len(es))
	}
	e := es[0]
	n, err1 := e.Uint("batch_count_cfg")
	on, err2 := e.Bool("app_enable")
	if e.Action != "trigger_timer_one_shot" || n != 9 || on || err1 != nil || err2 != nil {
		t.Errorf("read back action %s batch_count_cfg %d (%v) app_enable %v (%v)", e.Action, n, err1, on, err2)
	}
	if err := c.Apply(ctx, []bfrt.Write{bfrt.PFCEnable(144, 1<<3)}); err != nil {
		t.Fatal(err)
	}
}

// TestEnableBatch: the enables of three pauses, two on pipe 1's port 144
// and 150 and one on pipe 0's port 4, go out as one WriteRequest per pipe
// holding every enable of the pipe as its updates (pipe 1 first, the pipe
// of the first pause), byte for byte.
func TestEnableBatch(t *testing.T) {
	c, _ := connect(t, bfrt.Tofino1)
	p := examplePause
	p2, p3 := p, p
	p2.Port, p3.Port = 4, 150
	plan, err := bfrt.PlanPauses(bfrt.Tofino1, []bfrt.Pause{p, p2, p3})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := c.BatchRequests(plan.Enable)
	if err != nil {
		t.Fatal(err)
	}
	u32 := func(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
	enable := func(app uint32) []byte {
		te := cat(varint(1, 0xFF020002), lenField(3, boolean(12, true)), lenField(2, lenField(1, varint(1, 1), lenField(2, lenField(1, u32(app))))))
		return lenField(3, varint(1, uint64(pb.Update_MODIFY)), lenField(2, lenField(1, te)))
	}
	request := func(pipe uint64, updates ...[]byte) []byte {
		return cat(lenField(1, varint(2, pipe), varint(3, 0xFF), varint(4, 0xFF)), varint(2, 1), cat(updates...), lenField(5, []byte("lumina")))
	}
	// Pipe 1: apps 0 and 4 (1–3 are never used); pipe 0: app 0.
	want := [][]byte{request(1, enable(0), enable(4)), request(0, enable(0))}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, req := range reqs {
		got, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Errorf("request %d:\n got %x\nwant %x", i, got, want[i])
		}
	}
}

// TestPktgenPortOverride: a program built with -DLUMINA_PKTGEN_PORT=70
// and `--pktgen-port 70`: the generator is enabled on pipe 1's port 70
// (196 − 68 + 70 = 198), and the app's packets enter there; a port that is
// not a pktgen port of the chip is refused, and the fake refuses an app
// whose source port's generator is not enabled.
func TestPktgenPortOverride(t *testing.T) {
	plan, err := bfrt.PlanPausesOn(bfrt.Tofino1, 70, []bfrt.Pause{examplePause})
	if err != nil {
		t.Fatal(err)
	}
	if k := plan.Setup[0].Entry.Keys[0]; plan.Setup[0].Entry.Table != "pktgen.port_cfg" || k.Val != uint64(198) {
		t.Errorf("port_cfg %v, want dev_port 198", plan.Setup[0].Entry)
	}
	var src any
	for _, kv := range plan.Setup[2].Entry.Data {
		if kv.Name == "pipe_local_source_port" {
			src = kv.Val
		}
	}
	if src != uint64(70) {
		t.Errorf("pipe_local_source_port %v, want 70", src)
	}
	for _, bad := range []struct {
		chip bfrt.Chip
		port uint32
	}{{bfrt.Tofino1, 6}, {bfrt.Tofino1, 72}, {bfrt.Tofino2, 8}, {bfrt.Tofino2, 68}} {
		if _, err := bfrt.PlanPausesOn(bad.chip, bad.port, []bfrt.Pause{examplePause}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pktgen port %d", bad.port)) {
			t.Errorf("Tofino %d port %d: %v", bad.chip, bad.port, err)
		}
	}
	// The fake: the generator enabled on the default port 68, the app's
	// packets entering on 70: refused.
	c, _ := connect(t, bfrt.Tofino1)
	def, err := bfrt.PlanPauses(bfrt.Tofino1, []bfrt.Pause{examplePause})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Apply(context.Background(), def.Setup[:1], plan.Setup[1:], plan.Enable)
	if err == nil || !strings.Contains(err.Error(), "enabled before pktgen on port 198") {
		t.Errorf("app on port 70, generator on 68: %v", err)
	}
}
