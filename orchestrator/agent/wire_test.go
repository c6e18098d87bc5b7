package agent

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/nic"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/roce"
)

// zeroFields returns the paths of the exported fields of v (recursively:
// through structs, pointers, slice and array elements and map values) that
// hold their zero value, except those named in skip (by field name).
func zeroFields(v any, skip ...string) []string {
	var out []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if v.IsZero() {
			out = append(out, path)
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			walk(path, v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				sf := v.Type().Field(i)
				if !sf.IsExported() || slices.Contains(skip, sf.Name) {
					continue
				}
				walk(path+"."+sf.Name, v.Field(i))
			}
		case reflect.Slice:
			if v.Len() == 0 {
				out = append(out, path)
			}
			for i := range v.Len() {
				walk(path+"["+strconv.Itoa(i)+"]", v.Index(i))
			}
		case reflect.Map:
			if v.Len() == 0 {
				out = append(out, path)
			}
			for it := v.MapRange(); it.Next(); {
				walk(path+"[key]", it.Key())
				walk(path+"[value]", it.Value())
			}
		}
	}
	walk(reflect.TypeOf(v).Name(), reflect.ValueOf(v))
	return out
}

// unsetFields returns the paths of m's fields (recursively) that are not
// populated: every field of a message converted from a full Go value must
// carry something, so a proto field without a Go counterpart shows up.
func unsetFields(m proto.Message, skip ...string) []string {
	var out []string
	var walk func(path string, m protoreflect.Message)
	walk = func(path string, m protoreflect.Message) {
		fields := m.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			p := path + "." + string(fd.Name())
			if slices.Contains(skip, string(fd.Name())) {
				continue
			}
			if !m.Has(fd) {
				out = append(out, p)
				continue
			}
			switch {
			case fd.IsList() && fd.Message() != nil:
				l := m.Get(fd).List()
				for j := range l.Len() {
					walk(p+"["+strconv.Itoa(j)+"]", l.Get(j).Message())
				}
			case fd.IsMap():
			case fd.Message() != nil:
				walk(p, m.Get(fd).Message())
			}
		}
	}
	walk(string(m.ProtoReflect().Descriptor().Name()), m.ProtoReflect())
	return out
}

// viaWire sends m through the protobuf encoding, as gRPC does.
func viaWire[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// roundTrip checks that every field of x is filled, that toProto fills
// every field of the message, and that fromProto(wire(toProto(x))) == want.
func roundTrip[T any, M proto.Message](t *testing.T, x, want T, toProto func(T) M, fromProto func(M) (T, error), skip ...string) {
	t.Helper()
	if z := zeroFields(x, skip...); len(z) > 0 {
		t.Fatalf("the test value leaves fields zero (fill them, and carry them on the wire): %v", z)
	}
	m := toProto(x)
	if u := unsetFields(m); len(u) > 0 {
		t.Errorf("proto fields not set from a full Go value: %v", u)
	}
	got, err := fromProto(viaWire(t, m))
	if err != nil {
		t.Fatalf("FromProto: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestZeroFieldsFindsUnfilledFields(t *testing.T) {
	tr := fullTraffic()
	tr.WithImm = false
	tr.DSCP = []int{1, 0}
	z := zeroFields(tr)
	if !reflect.DeepEqual(z, []string{"Traffic.DSCP[1]", "Traffic.WithImm"}) {
		t.Errorf("zeroFields = %v", z)
	}
	m := TrafficToProto(tr)
	if u := unsetFields(m); !reflect.DeepEqual(u, []string{"Traffic.with_imm"}) {
		t.Errorf("unsetFields = %v", u)
	}
}

// ---- full values ----

func fullPersonality() softrnic.Personality {
	return softrnic.Personality{
		Name: "custom", Description: "every field set",
		LineRateGbps: 25.5, NakGenDelay: softrnic.Duration(1100 * time.Nanosecond),
		NakGenDelayLastPacket: softrnic.Duration(13 * time.Microsecond),
		NakReactionDelay:      softrnic.Duration(150 * time.Microsecond), NakReactionJitter: softrnic.Duration(50 * time.Microsecond),
		NakGenSlowLastPackets: 3, QPStartJitter: softrnic.Duration(10 * time.Microsecond),
		TxPipelinePackets: 7, AckReqEvery: 64, MaxOutstandingPSNs: 1 << 12,
		TimeoutFirstFactor: 3.5, TimeoutFirstFactorMax: 4.25, TimeoutNextFactor: 8, MinTimeoutExp: 9,
		Adaptive: []softrnic.AdaptiveStage{
			{Intervals: []softrnic.Duration{softrnic.Duration(5599999 * time.Nanosecond), softrnic.Duration(time.Second)}, TtrFactors: []float64{0.0834, 1.5}, MaxRetries: 13},
			{Intervals: []softrnic.Duration{softrnic.Duration(671 * time.Millisecond)}, TtrFactors: []float64{10}, MaxRetries: 7},
		},
		CNPScope: softrnic.CNPPerIPPair, CNPOnNAK: true, AckEveryDuplicate: true,
		PauseReactionDelay: softrnic.Duration(2017 * time.Nanosecond), RxBufferBytes: 130944, RxXoffBytes: 95264, RxXonBytes: 86048,
		RxPipelineGbps: 126, MTTCacheEntries: 2048, MTTMissPenalty: softrnic.Duration(time.Microsecond),
		StormWatchdog: softrnic.Duration(100 * time.Millisecond),
		ODPPageFault:  softrnic.Duration(450 * time.Microsecond), ODPRNRNakDelay: softrnic.Duration(141 * time.Microsecond),
		ODPDupReadDelay: softrnic.Duration(77 * time.Microsecond), RNRWaitFactor: 2.75,
	}
}

func fullRNICConfig() softrnic.Config {
	return softrnic.Config{
		Name: "req", MAC: [6]byte{2, 0, 0, 0, 0, 0x11},
		IPs:         []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fe80::1%eth0")},
		Personality: fullPersonality(), Seed: 0xdeadbeefcafe,
		DisableRP: true, DisableNP: true, MinTimeBetweenCNPs: 4 * time.Microsecond, CNPScope: softrnic.CNPPerPort,
		AdaptiveRetrans: true, SlowRestart: true,
		PFC: &softrnic.PFCConfig{Priorities: 0x08, DSCPToPriority: [64]uint8{26: 3, 63: 7}, PageSize: 2 << 20},
		ODP: &softrnic.ODPConfig{PageFault: 250 * time.Microsecond, Prefetch: true}, ODPInTest: true,
	}
}

func fullNICDevice() nic.Device {
	return nic.Device{IfName: "ens1f0", IBDev: "mlx5_0", Port: 2, PCIAddr: "0000:3b:00.0", Vendor: nic.VendorIntel}
}

func fullNICParams() nic.Params {
	return nic.Params{DCQCNRPEnable: true, DCQCNNPEnable: true, MinTimeBetweenCNPs: 4, AdaptiveRetrans: true,
		SlowRestart: true, DCQCNEnable: true, Trust: "dscp", DSCP2Prio: map[int]int{26: 3, 48: 6}}
}

func fullTraffic() generator.Traffic {
	return generator.Traffic{Verb: generator.VerbSendRead, NumQPs: 2, NumReadQPs: 1, MsgsPerQP: 10, MsgSize: new(1 << 20),
		MTU: 4096, TxDepth: 3, Barrier: true, MultiGID: true, Timeout: new(uint8(255)),
		RetryCnt: new(uint8(6)), DSCP: []int{26, 48}, WithImm: true,
		MinRNRTimer: new(uint8(14)), RNRRetry: new(uint8(3)), PostIntervalNs: 3_000_000}
}

func fullEndpoint(i uint32) generator.Endpoint {
	return generator.Endpoint{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), MAC: roce.MAC{2, 0, 0, 0, 0, byte(i)},
		QPN: 0x100 + i, IPSN: 0xabcde + i, Addr: 0x7f00_0000_0000 + uint64(i), RKey: 0x1010 + i, Len: 4096 * int(i)}
}

func fullConnection(i int) generator.Connection {
	return generator.Connection{Index: i + 1, Verb: generator.VerbRead, Requester: fullEndpoint(1), Responder: fullEndpoint(2),
		Flow: "flow-" + strconv.Itoa(i)}
}

func fullResult() generator.Result {
	return generator.Result{
		Verb: generator.VerbWrite, Bytes: 1 << 33, DurationNs: 123456789, GoodputGbps: 87.25,
		QPs: []generator.QPResult{
			{Index: 1, Posted: 10, Completed: 9, Errors: 1, MCTNs: []int64{1000, 2000}, AvgMCTNs: 1500},
			{Index: 2, Posted: 10, Completed: 10, Errors: 2, MCTNs: []int64{3000}, AvgMCTNs: 3000},
		},
		Errors:      []string{"qp 1: RETRY_EXC_ERR"},
		Responder:   &generator.ResponderStats{RecvCompletions: 19, RecvErrors: 1, Verified: true, BadQPs: []int{1}, Counters: map[string]uint64{"rx_write_requests": 20}},
		Connections: []generator.Connection{fullConnection(0), fullConnection(1)},
		Counters:    map[string]uint64{"out_of_sequence": 3, "packet_seq_err": 1},
	}
}

// ---- round trips ----

type stubPort struct{}

func (stubPort) Send([]byte)                {}
func (stubPort) SetReceiver(func(b []byte)) {}
func (stubPort) Name() string               { return "stub" }

func TestWireDumperConfigRoundTrip(t *testing.T) {
	c := dumper.Config{Name: "d0", Backend: "dpdk", Interface: "eth1", Workers: 4, SnapLen: 256, Capacity: 1 << 21,
		MirrorPort: 65535, FanoutMode: "hash", EALArgs: []string{"--no-huge", "-m", "256"}, OutPath: "/tmp/d0.pcap",
		BlockSize: 1 << 22, BlockCount: 32, BlockTimeout: 25 * time.Millisecond,
		SimPort: stubPort{}}
	want := c
	want.SimPort = nil // not sent: the agent provides it
	roundTrip(t, c, want, DumperConfigToProto, DumperConfigFromProto)
}

func TestWireDumperReportRoundTrip(t *testing.T) {
	r := dumper.Report{Name: "d0", Backend: "afpacket", Captured: 100, KernelDropped: 2, BufferDropped: 3, Foreign: 4, Full: true,
		PerWorker: []dumper.WorkerReport{
			{Worker: 1, Received: 60, Captured: 50, KernelDropped: 1, BufferDropped: 2, Foreign: 3},
			{Worker: 2, Received: 55, Captured: 50, KernelDropped: 1, BufferDropped: 1, Foreign: 1},
		},
		Path: "/tmp/d0.pcap"}
	roundTrip(t, r, r, DumperReportToProto, DumperReportFromProto)
	roundTrip(t, r.PerWorker[0], r.PerWorker[0], WorkerReportToProto, WorkerReportFromProto)
}

func TestWireInjectorTimingRoundTrip(t *testing.T) {
	tm := injector.Timing{Frames: 1000, LateP50: 120 * time.Microsecond, LateP99: 3 * time.Millisecond, LateMax: 8 * time.Millisecond,
		ClampMax: 450 * time.Microsecond, SentMax: 70 * time.Microsecond}
	roundTrip(t, tm, tm, InjectorTimingToProto, InjectorTimingFromProto)
}

func TestWireNICSpecRoundTrip(t *testing.T) {
	p := fullNICParams()
	s := NICSpec{Backend: "verbs", Device: fullNICDevice(), Configure: &p, Interface: "ens1f0", RNIC: fullRNICConfig()}
	roundTrip(t, s, s, NICSpecToProto, NICSpecFromProto)
	roundTrip(t, s.Device, s.Device, NICDeviceToProto, NICDeviceFromProto)
	roundTrip(t, p, p, NICParamsToProto, NICParamsFromProto)
	roundTrip(t, s.RNIC, s.RNIC, RNICConfigToProto, RNICConfigFromProto)

	// The softrnic spec: no device, no configuration, default personality.
	soft := NICSpec{Interface: "eth0", RNIC: softrnic.Config{IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}}}
	got, err := NICSpecFromProto(viaWire(t, NICSpecToProto(soft)))
	if err != nil || !reflect.DeepEqual(got, soft) {
		t.Errorf("softrnic spec: got %+v, %v; want %+v", got, err, soft)
	}
}

func TestWireNICVersionsRoundTrip(t *testing.T) {
	v := nic.Versions{IfName: "ens1f0", IBDev: "mlx5_0", PCIAddr: "0000:3b:00.0", Driver: "mlx5_core", DriverVersion: "24.10",
		Firmware: "16.35.2000", HCAType: "MT4119", BoardID: "MT_0000000010", Kernel: "6.12.0",
		Personality: "cx5"}
	roundTrip(t, v, v, NICVersionsToProto, NICVersionsFromProto)
}

func TestWireTrafficRoundTrip(t *testing.T) {
	tr := fullTraffic()
	roundTrip(t, tr, tr, TrafficToProto, TrafficFromProto)
}

func TestWireResultRoundTrip(t *testing.T) {
	r := fullResult()
	roundTrip(t, r, r, ResultToProto, ResultFromProto)
	roundTrip(t, r.QPs[0], r.QPs[0], QPResultToProto, QPResultFromProto)
	roundTrip(t, *r.Responder, *r.Responder, ResponderStatsToProto, ResponderStatsFromProto)

	// Empty collections decode as nil, an unset responder as nil.
	empty := generator.Result{Verb: generator.VerbSend, QPs: []generator.QPResult{}, Connections: []generator.Connection{}}
	got, err := ResultFromProto(viaWire(t, ResultToProto(empty)))
	if err != nil || got.Responder != nil || got.QPs != nil || got.Connections != nil || got.Verb != generator.VerbSend {
		t.Errorf("empty result: got %+v, %v", got, err)
	}
}

func TestWireConnectionsRoundTrip(t *testing.T) {
	c := fullConnection(0)
	roundTrip(t, c, c, ConnectionToProto, ConnectionFromProto)
	roundTrip(t, c.Requester, c.Requester, EndpointToProto, EndpointFromProto)
	cs := []generator.Connection{fullConnection(0), fullConnection(1)}
	got, err := ConnectionsFromProto(ConnectionsToProto(cs))
	if err != nil || !reflect.DeepEqual(got, cs) {
		t.Errorf("connections: got %+v, %v", got, err)
	}
	if got, err := ConnectionsFromProto(nil); got != nil || err != nil {
		t.Errorf("no connections: got %v, %v", got, err)
	}
}

// TestWirePersonalityYAML checks that every builtin personality survives
// the personality file format, both yaml.v3's plain encoding of the struct
// and PersonalityToYAML, and that PersonalityToYAML also keeps the fields
// that softrnic's tags omit when empty.
func TestWirePersonalityYAML(t *testing.T) {
	names := softrnic.Personalities()
	if len(names) == 0 {
		t.Fatal("no builtin personalities")
	}
	for _, name := range names {
		p, err := softrnic.LoadPersonality(name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := softrnic.ParsePersonality(name+".yaml", b)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%s: ParsePersonality(yaml.Marshal(p)) = %+v, %v; want %+v\n%s", name, got, err, p, b)
		}
		got, err = PersonalityFromYAML(softrnic.MarshalPersonality(p))
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%s: PersonalityFromYAML(softrnic.MarshalPersonality(p)) = %+v, %v; want %+v", name, got, err, p)
		}
	}

	full := fullPersonality()
	if z := zeroFields(full); len(z) > 0 {
		t.Fatalf("fullPersonality leaves fields zero: %v", z)
	}
	for _, p := range []softrnic.Personality{
		full,
		func() softrnic.Personality { p := full; p.Description, p.Adaptive = "", nil; return p }(),
		func() softrnic.Personality { p := full; p.Name = ""; return p }(),
		{},
	} {
		got, err := PersonalityFromYAML(softrnic.MarshalPersonality(p))
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("PersonalityFromYAML(softrnic.MarshalPersonality(%+v)) = %+v, %v\n%s", p, got, err, softrnic.MarshalPersonality(p))
		}
	}
	if b := softrnic.MarshalPersonality(softrnic.Personality{}); len(b) != 0 {
		t.Errorf("the zero personality encodes as %q, want empty", b)
	}
}

// ---- rejections ----

func TestWireRejects(t *testing.T) {
	spec := func(edit func(*luminav1.NICSpec)) func() error {
		return func() error {
			p := fullNICParams()
			m := NICSpecToProto(NICSpec{Device: fullNICDevice(), Configure: &p, RNIC: fullRNICConfig()})
			edit(m)
			_, err := NICSpecFromProto(m)
			return err
		}
	}
	rnic := func(edit func(*luminav1.RNICConfig)) func() error {
		return func() error {
			m := RNICConfigToProto(fullRNICConfig())
			edit(m)
			_, err := RNICConfigFromProto(m)
			return err
		}
	}
	traffic := func(edit func(*luminav1.Traffic)) func() error {
		return func() error {
			m := TrafficToProto(fullTraffic())
			edit(m)
			_, err := TrafficFromProto(m)
			return err
		}
	}
	result := func(edit func(*luminav1.Result)) func() error {
		return func() error {
			m := ResultToProto(fullResult())
			edit(m)
			_, err := ResultFromProto(m)
			return err
		}
	}
	endpoint := func(edit func(*luminav1.Endpoint)) func() error {
		return func() error {
			m := EndpointToProto(fullEndpoint(1))
			edit(m)
			_, err := EndpointFromProto(m)
			return err
		}
	}
	personality := func(doc string) func(*luminav1.RNICConfig) {
		return func(m *luminav1.RNICConfig) { m.PersonalityYaml = []byte(doc) }
	}
	for _, c := range []struct {
		name, field string
		run         func() error
	}{
		{"nil DumperConfig", "DumperConfig", func() error { _, err := DumperConfigFromProto(nil); return err }},
		{"mirror port overflow", "DumperConfig.mirror_port", func() error {
			_, err := DumperConfigFromProto(&luminav1.DumperConfig{MirrorPort: 65536})
			return err
		}},
		{"nil DumperReport", "DumperReport", func() error { _, err := DumperReportFromProto(nil); return err }},
		{"nil worker report", "DumperReport.per_worker[1]", func() error {
			_, err := DumperReportFromProto(&luminav1.DumperReport{PerWorker: []*luminav1.DumperWorkerReport{{}, nil}})
			return err
		}},
		{"nil DumperWorkerReport", "DumperWorkerReport", func() error { _, err := WorkerReportFromProto(nil); return err }},

		{"nil NICSpec", "NICSpec", func() error { _, err := NICSpecFromProto(nil); return err }},
		{"no device", "NICSpec.device", spec(func(m *luminav1.NICSpec) { m.Device = nil })},
		{"no rnic", "NICSpec.rnic", spec(func(m *luminav1.NICSpec) { m.Rnic = nil })},
		{"bad vendor", "NICSpec.device.vendor", spec(func(m *luminav1.NICSpec) { m.Device.Vendor = 3 })},
		{"nested bad MAC", "NICSpec.rnic.mac", spec(func(m *luminav1.NICSpec) { m.Rnic.Mac = m.Rnic.Mac[:5] })},
		{"nil NICDevice", "NICDevice", func() error { _, err := NICDeviceFromProto(nil); return err }},
		{"nil NICParams", "NICParams", func() error { _, err := NICParamsFromProto(nil); return err }},
		{"nil NICVersions", "NICVersions", func() error { _, err := NICVersionsFromProto(nil); return err }},

		{"nil RNICConfig", "RNICConfig", func() error { _, err := RNICConfigFromProto(nil); return err }},
		{"short MAC", "RNICConfig.mac", rnic(func(m *luminav1.RNICConfig) { m.Mac = []byte{2, 0, 0} })},
		{"no MAC", "RNICConfig.mac", rnic(func(m *luminav1.RNICConfig) { m.Mac = nil })},
		{"bad IP", "RNICConfig.ips[1]", rnic(func(m *luminav1.RNICConfig) { m.Ips[1] = "10.0.0.300" })},
		{"empty IP", "RNICConfig.ips[0]", rnic(func(m *luminav1.RNICConfig) { m.Ips[0] = "" })},
		{"bad CNP scope", "RNICConfig.cnp_scope", rnic(func(m *luminav1.RNICConfig) { m.CnpScope = 5 })},
		{"CNP scope overflow", "RNICConfig.cnp_scope", rnic(func(m *luminav1.RNICConfig) { m.CnpScope = 257 })},
		{"negative RNR wait factor", "RNICConfig.personality_yaml", rnic(personality("rnr-wait-factor: -1\n"))},
		{"personality not YAML", "RNICConfig.personality_yaml", rnic(personality("name: [unterminated"))},
		{"personality unknown key", "RNICConfig.personality_yaml", rnic(personality("name: x\nline-rate: 40\n"))},
		{"negative page fault", "RNICConfig.odp.page_fault_ns", rnic(func(m *luminav1.RNICConfig) { m.Odp.PageFaultNs = -1 })},
		{"personality invalid", "RNICConfig.personality_yaml", rnic(personality("name: x\nline-rate-gbps: 0\n"))},
		{"personality unknown base", "RNICConfig.personality_yaml", rnic(personality("base: cx9\n"))},

		{"nil Traffic", "Traffic", func() error { _, err := TrafficFromProto(nil); return err }},
		{"unknown verb", "Traffic.verb", traffic(func(m *luminav1.Traffic) { m.Verb = "atomic" })},
		{"timeout overflow", "Traffic.timeout", traffic(func(m *luminav1.Traffic) { m.Timeout = 256 })},
		{"retry_cnt overflow", "Traffic.retry_cnt", traffic(func(m *luminav1.Traffic) { m.RetryCnt = 1 << 20 })},
		{"min_rnr_timer overflow", "Traffic.min_rnr_timer", traffic(func(m *luminav1.Traffic) { m.MinRnrTimer = 256 })},
		{"rnr_retry overflow", "Traffic.rnr_retry", traffic(func(m *luminav1.Traffic) { m.RnrRetry = 1 << 9 })},

		{"nil Result", "Result", func() error { _, err := ResultFromProto(nil); return err }},
		{"result verb", "Result.verb", result(func(m *luminav1.Result) { m.Verb = "WRITE" })},
		{"nil QP result", "Result.qps[1]", result(func(m *luminav1.Result) { m.Qps[1] = nil })},
		{"result connection IP", "Result.connections[1].requester.ip", result(func(m *luminav1.Result) { m.Connections[1].Requester.Ip = "host" })},
		{"nil QPResult", "QPResult", func() error { _, err := QPResultFromProto(nil); return err }},
		{"nil ResponderStats", "ResponderStats", func() error { _, err := ResponderStatsFromProto(nil); return err }},

		{"nil connection", "connections[1]", func() error {
			_, err := ConnectionsFromProto([]*luminav1.Connection{ConnectionToProto(fullConnection(0)), nil})
			return err
		}},
		{"nil Connection", "Connection", func() error { _, err := ConnectionFromProto(nil); return err }},
		{"connection verb", "Connection.verb", func() error {
			m := ConnectionToProto(fullConnection(0))
			m.Verb = "bogus"
			_, err := ConnectionFromProto(m)
			return err
		}},
		{"no responder endpoint", "Connection.responder", func() error {
			m := ConnectionToProto(fullConnection(0))
			m.Responder = nil
			_, err := ConnectionFromProto(m)
			return err
		}},
		{"nil Endpoint", "Endpoint", func() error { _, err := EndpointFromProto(nil); return err }},
		{"endpoint IP", "Endpoint.ip", endpoint(func(m *luminav1.Endpoint) { m.Ip = "10.0.0" })},
		{"endpoint MAC", "Endpoint.mac", endpoint(func(m *luminav1.Endpoint) { m.Mac = "02:00:00:00:00" })},
		{"endpoint EUI-64", "Endpoint.mac", endpoint(func(m *luminav1.Endpoint) { m.Mac = "02:00:00:00:00:00:00:01" })},
		{"endpoint no MAC", "Endpoint.mac", endpoint(func(m *luminav1.Endpoint) { m.Mac = "" })},

		{"nil InjectorTimingResponse", "InjectorTimingResponse", func() error { _, err := InjectorTimingFromProto(nil); return err }},
		{"clamp overflow", "InjectorTimingResponse.clamp_max_ns", func() error {
			_, err := InjectorTimingFromProto(&luminav1.InjectorTimingResponse{ClampMaxNs: 1 << 63})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrWire) {
				t.Errorf("%v does not wrap ErrWire", err)
			}
			var we *WireError
			if !errors.As(err, &we) || we.Field != c.field {
				t.Errorf("%v: want field %q", err, c.field)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("%q does not name %q", err, c.field)
			}
		})
	}
}

// TestWireRejectsReturnZero checks that a failed conversion returns the
// zero value, not a partly decoded one.
func TestWireRejectsReturnZero(t *testing.T) {
	m := TrafficToProto(fullTraffic())
	m.Timeout = 300
	got, err := TrafficFromProto(m)
	if err == nil || !reflect.ValueOf(got).IsZero() {
		t.Errorf("got %+v, %v", got, err)
	}
}

// TestWirePersonalityErrorWrapsCause checks that the personality parser's
// error stays reachable.
func TestWirePersonalityErrorWrapsCause(t *testing.T) {
	m := RNICConfigToProto(fullRNICConfig())
	m.PersonalityYaml = []byte("base: cx9\n")
	_, err := RNICConfigFromProto(m)
	if !errors.Is(err, softrnic.ErrUnknownPersonality) || !errors.Is(err, ErrWire) {
		t.Errorf("%v: want ErrWire and softrnic.ErrUnknownPersonality", err)
	}
	if strings.Contains(err.Error(), ": :") {
		t.Errorf("%q: stray separator", err)
	}
}

func TestWireInjectorPFCRoundTrip(t *testing.T) {
	var c [roce.PFCPriorities]injector.PFCCounters
	c[3] = injector.PFCCounters{RxPause: 1, TxPause: 2, XOFF: 3, XON: 4, RxPauseNs: 5, LosslessDrops: 6, LossyDrops: 7, WatchdogDrops: 8, Storms: 9, Restores: 10}
	ctr := map[uint32][roce.PFCPriorities]injector.PFCCounters{2: c}
	log := []injector.PFCEvent{{At: 100, Port: 2, Priority: 3, Kind: injector.PFCStorm}, {At: 200, Port: 2, Priority: 3, Kind: injector.PFCRestore}}
	m := InjectorPFCToProto(ctr, log)
	st, err := InjectorPFCFromProto(m)
	if err != nil || !reflect.DeepEqual(st.Counters, ctr) || !reflect.DeepEqual(st.Log, log) {
		t.Fatalf("round trip: %+v, %v", st, err)
	}
	m.Log[0].Kind = "flood"
	if _, err := InjectorPFCFromProto(m); !errors.Is(err, ErrWire) {
		t.Errorf("unknown kind: %v, want ErrWire", err)
	}
	m.Log[0].Kind, m.Ports[0].Priority = "storm", 8
	if _, err := InjectorPFCFromProto(m); !errors.Is(err, ErrWire) {
		t.Errorf("priority 8: %v, want ErrWire", err)
	}
}

// TestSwitchPFCWatchdogPorts: a fabric's per-port watchdogs cross the wire
// as they are, a port without one (nil) included; a negative time or a
// port past 9 bits is refused.
func TestSwitchPFCWatchdogPorts(t *testing.T) {
	w := &injector.PFCWatchdog{Detection: 100 * time.Millisecond, Restoration: 200 * time.Millisecond}
	in := &injector.PFCConfig{Lossless: 1 << 3, PortBps: map[uint32]int64{200: 100e9}, WatchdogPorts: map[uint32]*injector.PFCWatchdog{1: w, 200: w, 201: nil}}
	got, err := SwitchPFCFromProto(SwitchPFCToProto(in))
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Errorf("round trip = %+v, %v; want %+v", got, err, in)
	}
	for _, bad := range []map[uint32]*luminav1.PortWatchdog{{512: {}}, {3: {Watchdog: true, DetectionNs: -1}}} {
		m := SwitchPFCToProto(&injector.PFCConfig{})
		m.WatchdogPorts = bad
		if _, err := SwitchPFCFromProto(m); !errors.Is(err, ErrWire) {
			t.Errorf("watchdog_ports %v: error %v, want ErrWire", bad, err)
		}
	}
}
