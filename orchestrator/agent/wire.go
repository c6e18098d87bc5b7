package agent

// Conversions between the Go types that cross the agent boundary and their
// typed protobuf messages (proto/lumina/v1/lumina.proto, whose header
// documents the encoding conventions).
//
// Every XToProto is total: it encodes whatever the Go value holds. Every
// XFromProto validates what the Go type cannot hold (a nil message, a
// number that would overflow, an IP or MAC that does not parse, an unknown
// enum value or verb, a personality file that ParsePersonality rejects) and
// returns a *WireError, which wraps ErrWire and names the field.
// Semantic checks (ranges, defaults) stay with the consumers
// (dumper.New, softrnic.New, generator.NewRequester, nic.Configure).

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/generator"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/nic"
	luminav1 "github.com/netlumina/lumina/proto/luminav1"
	"github.com/netlumina/lumina/roce"
)

// ErrWire is wrapped by every error of the FromProto conversions.
var ErrWire = errors.New("agent: invalid wire message")

// WireError is a FromProto conversion's error: Field is the path of the
// offending field from the message converted, e.g.
// "NICSpec.rnic.ips[1]" or "connections[0].requester.mac". It matches
// ErrWire with errors.Is, and the cause (if any) too.
type WireError struct {
	Field string
	Err   error
}

func (e *WireError) Error() string { return ErrWire.Error() + ": " + e.Field + ": " + e.Err.Error() }

// Unwrap returns ErrWire and the cause.
func (e *WireError) Unwrap() []error { return []error{ErrWire, e.Err} }

// decoder records the first error of a conversion, so the conversions can
// read as plain assignments.
type decoder struct{ err error }

func (d *decoder) fail(field string, err error) {
	if d.err == nil {
		d.err = &WireError{Field: field, Err: err}
	}
}

func (d *decoder) failf(field, format string, args ...any) {
	d.fail(field, fmt.Errorf(format, args...))
}

// nilMsg reports (and records) a missing message.
func (d *decoder) nilMsg(field string, isNil bool) bool {
	if isNil {
		d.failf(field, "missing (nil message)")
	}
	return isNil
}

func (d *decoder) int(field string, v int64) int {
	if int64(int(v)) != v {
		d.failf(field, "%d overflows a %d-bit int", v, strconv.IntSize)
		return 0
	}
	return int(v)
}

// duration decodes a uint64 ns field as a time.Duration.
func (d *decoder) duration(field string, ns uint64) time.Duration {
	if ns > math.MaxInt64 {
		d.failf(field, "%d ns overflows a time.Duration", ns)
		return 0
	}
	return time.Duration(ns)
}

func (d *decoder) uint8(field string, v uint32) uint8 {
	if v > 0xff {
		d.failf(field, "%d overflows a uint8", v)
		return 0
	}
	return uint8(v)
}

func (d *decoder) uint16(field string, v uint32) uint16 {
	if v > 0xffff {
		d.failf(field, "%d overflows a uint16", v)
		return 0
	}
	return uint16(v)
}

func (d *decoder) ints(field string, vs []int64) []int {
	if len(vs) == 0 {
		return nil
	}
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = d.int(field+"["+strconv.Itoa(i)+"]", v)
	}
	return out
}

// enum checks that v is a value the proto enum declares (which also bounds
// it to the Go type's range) and returns its number.
func (d *decoder) enum(field string, v protoreflect.Enum) int32 {
	n := v.Number()
	if v.Descriptor().Values().ByNumber(n) == nil {
		d.failf(field, "unknown %s value %d", v.Descriptor().Name(), n)
		return 0
	}
	return int32(n)
}

func (d *decoder) verb(field, s string) generator.Verb {
	switch v := generator.Verb(s); v {
	case "", generator.VerbWrite, generator.VerbRead, generator.VerbSend, generator.VerbSendRead:
		return v
	}
	d.failf(field, "unknown verb %q (want write, read, send or send_read)", s)
	return ""
}

func int64s(vs []int) []int64 {
	if len(vs) == 0 {
		return nil
	}
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = int64(v)
	}
	return out
}

// cloneSlice and cloneMap copy, and make an empty slice or map nil (which
// is what the wire gives back).
func cloneSlice[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func cloneMap[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// done returns v, or v's zero value and the error if decoding failed.
func done[T any](v T, d *decoder) (T, error) {
	if d.err != nil {
		var zero T
		return zero, d.err
	}
	return v, nil
}

func index(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// ---- dumper ----

// DumperConfigToProto encodes c; c.SimPort is not sent.
func DumperConfigToProto(c dumper.Config) *luminav1.DumperConfig {
	return &luminav1.DumperConfig{
		Name:           c.Name,
		Backend:        c.Backend,
		Interface:      c.Interface,
		Workers:        int64(c.Workers),
		SnapLen:        int64(c.SnapLen),
		Capacity:       int64(c.Capacity),
		MirrorPort:     uint32(c.MirrorPort),
		FanoutMode:     c.FanoutMode,
		EalArgs:        cloneSlice(c.EALArgs),
		OutPath:        c.OutPath,
		BlockSize:      int64(c.BlockSize),
		BlockCount:     int64(c.BlockCount),
		BlockTimeoutNs: int64(c.BlockTimeout),
	}
}

// DumperConfigFromProto decodes m; SimPort is left nil.
func DumperConfigFromProto(m *luminav1.DumperConfig) (dumper.Config, error) {
	var d decoder
	return done(d.dumperConfig("DumperConfig", m), &d)
}

func (d *decoder) dumperConfig(f string, m *luminav1.DumperConfig) dumper.Config {
	if d.nilMsg(f, m == nil) {
		return dumper.Config{}
	}
	return dumper.Config{
		Name:         m.GetName(),
		Backend:      m.GetBackend(),
		Interface:    m.GetInterface(),
		Workers:      d.int(f+".workers", m.GetWorkers()),
		SnapLen:      d.int(f+".snap_len", m.GetSnapLen()),
		Capacity:     d.int(f+".capacity", m.GetCapacity()),
		MirrorPort:   d.uint16(f+".mirror_port", m.GetMirrorPort()),
		FanoutMode:   m.GetFanoutMode(),
		EALArgs:      cloneSlice(m.GetEalArgs()),
		OutPath:      m.GetOutPath(),
		BlockSize:    d.int(f+".block_size", m.GetBlockSize()),
		BlockCount:   d.int(f+".block_count", m.GetBlockCount()),
		BlockTimeout: time.Duration(m.GetBlockTimeoutNs()),
	}
}

// DumperReportToProto encodes r.
func DumperReportToProto(r dumper.Report) *luminav1.DumperReport {
	m := &luminav1.DumperReport{
		Name:          r.Name,
		Backend:       r.Backend,
		Captured:      r.Captured,
		KernelDropped: r.KernelDropped,
		BufferDropped: r.BufferDropped,
		Foreign:       r.Foreign,
		Path:          r.Path,
		Full:          r.Full,
	}
	for _, w := range r.PerWorker {
		m.PerWorker = append(m.PerWorker, WorkerReportToProto(w))
	}
	return m
}

// DumperReportFromProto decodes m.
func DumperReportFromProto(m *luminav1.DumperReport) (dumper.Report, error) {
	var d decoder
	return done(d.dumperReport("DumperReport", m), &d)
}

func (d *decoder) dumperReport(f string, m *luminav1.DumperReport) dumper.Report {
	if d.nilMsg(f, m == nil) {
		return dumper.Report{}
	}
	r := dumper.Report{
		Name:          m.GetName(),
		Backend:       m.GetBackend(),
		Captured:      m.GetCaptured(),
		KernelDropped: m.GetKernelDropped(),
		BufferDropped: m.GetBufferDropped(),
		Foreign:       m.GetForeign(),
		Path:          m.GetPath(),
		Full:          m.GetFull(),
	}
	for i, w := range m.GetPerWorker() {
		r.PerWorker = append(r.PerWorker, d.workerReport(index(f+".per_worker", i), w))
	}
	return r
}

// WorkerReportToProto encodes w.
func WorkerReportToProto(w dumper.WorkerReport) *luminav1.DumperWorkerReport {
	return &luminav1.DumperWorkerReport{
		Worker:        int64(w.Worker),
		Received:      w.Received,
		Captured:      w.Captured,
		KernelDropped: w.KernelDropped,
		BufferDropped: w.BufferDropped,
		Foreign:       w.Foreign,
	}
}

// WorkerReportFromProto decodes m.
func WorkerReportFromProto(m *luminav1.DumperWorkerReport) (dumper.WorkerReport, error) {
	var d decoder
	return done(d.workerReport("DumperWorkerReport", m), &d)
}

func (d *decoder) workerReport(f string, m *luminav1.DumperWorkerReport) dumper.WorkerReport {
	if d.nilMsg(f, m == nil) {
		return dumper.WorkerReport{}
	}
	return dumper.WorkerReport{
		Worker:        d.int(f+".worker", m.GetWorker()),
		Received:      m.GetReceived(),
		Captured:      m.GetCaptured(),
		KernelDropped: m.GetKernelDropped(),
		BufferDropped: m.GetBufferDropped(),
		Foreign:       m.GetForeign(),
	}
}

// ---- NIC ----

// NICSpecToProto encodes s.
func NICSpecToProto(s NICSpec) *luminav1.NICSpec {
	m := &luminav1.NICSpec{
		Backend:   s.Backend,
		Device:    NICDeviceToProto(s.Device),
		Interface: s.Interface,
		Rnic:      RNICConfigToProto(s.RNIC),
	}
	if s.Configure != nil {
		m.Configure = NICParamsToProto(*s.Configure)
	}
	return m
}

// NICSpecFromProto decodes m; device and rnic are required, an unset
// configure is a nil Configure.
func NICSpecFromProto(m *luminav1.NICSpec) (NICSpec, error) {
	var d decoder
	return done(d.nicSpec("NICSpec", m), &d)
}

func (d *decoder) nicSpec(f string, m *luminav1.NICSpec) NICSpec {
	if d.nilMsg(f, m == nil) {
		return NICSpec{}
	}
	s := NICSpec{
		Backend:   m.GetBackend(),
		Device:    d.nicDevice(f+".device", m.GetDevice()),
		Interface: m.GetInterface(),
		RNIC:      d.rnicConfig(f+".rnic", m.GetRnic()),
	}
	if m.GetConfigure() != nil {
		p := d.nicParams(f+".configure", m.GetConfigure())
		s.Configure = &p
	}
	return s
}

// NICDeviceToProto encodes dev.
func NICDeviceToProto(dev nic.Device) *luminav1.NICDevice {
	return &luminav1.NICDevice{
		IfName:  dev.IfName,
		IbDev:   dev.IBDev,
		Port:    int64(dev.Port),
		PciAddr: dev.PCIAddr,
		Vendor:  luminav1.NICVendor(dev.Vendor),
	}
}

// NICDeviceFromProto decodes m.
func NICDeviceFromProto(m *luminav1.NICDevice) (nic.Device, error) {
	var d decoder
	return done(d.nicDevice("NICDevice", m), &d)
}

func (d *decoder) nicDevice(f string, m *luminav1.NICDevice) nic.Device {
	if d.nilMsg(f, m == nil) {
		return nic.Device{}
	}
	return nic.Device{
		IfName:  m.GetIfName(),
		IBDev:   m.GetIbDev(),
		Port:    d.int(f+".port", m.GetPort()),
		PCIAddr: m.GetPciAddr(),
		Vendor:  nic.Vendor(d.enum(f+".vendor", m.GetVendor())),
	}
}

// NICParamsToProto encodes p.
func NICParamsToProto(p nic.Params) *luminav1.NICParams {
	m := &luminav1.NICParams{
		DcqcnRpEnable:        p.DCQCNRPEnable,
		DcqcnNpEnable:        p.DCQCNNPEnable,
		MinTimeBetweenCnpsUs: int64(p.MinTimeBetweenCNPs),
		AdaptiveRetrans:      p.AdaptiveRetrans,
		SlowRestart:          p.SlowRestart,
		DcqcnEnable:          p.DCQCNEnable,
		Trust:                p.Trust,
	}
	if len(p.DSCP2Prio) > 0 {
		m.Dscp2Prio = make(map[int64]int64, len(p.DSCP2Prio))
		for k, v := range p.DSCP2Prio {
			m.Dscp2Prio[int64(k)] = int64(v)
		}
	}
	return m
}

// NICParamsFromProto decodes m.
func NICParamsFromProto(m *luminav1.NICParams) (nic.Params, error) {
	var d decoder
	return done(d.nicParams("NICParams", m), &d)
}

func (d *decoder) nicParams(f string, m *luminav1.NICParams) nic.Params {
	if d.nilMsg(f, m == nil) {
		return nic.Params{}
	}
	p := nic.Params{
		DCQCNRPEnable:      m.GetDcqcnRpEnable(),
		DCQCNNPEnable:      m.GetDcqcnNpEnable(),
		MinTimeBetweenCNPs: d.int(f+".min_time_between_cnps_us", m.GetMinTimeBetweenCnpsUs()),
		AdaptiveRetrans:    m.GetAdaptiveRetrans(),
		SlowRestart:        m.GetSlowRestart(),
		DCQCNEnable:        m.GetDcqcnEnable(),
		Trust:              m.GetTrust(),
	}
	if len(m.GetDscp2Prio()) > 0 {
		p.DSCP2Prio = make(map[int]int, len(m.GetDscp2Prio()))
		for k, v := range m.GetDscp2Prio() {
			kf := f + ".dscp2prio[" + strconv.FormatInt(k, 10) + "]"
			p.DSCP2Prio[d.int(kf, k)] = d.int(kf, v)
		}
	}
	return p
}

// NICVersionsToProto encodes v.
func NICVersionsToProto(v nic.Versions) *luminav1.NICVersions {
	return &luminav1.NICVersions{
		IfName:        v.IfName,
		IbDev:         v.IBDev,
		PciAddr:       v.PCIAddr,
		Driver:        v.Driver,
		DriverVersion: v.DriverVersion,
		Firmware:      v.Firmware,
		HcaType:       v.HCAType,
		BoardId:       v.BoardID,
		Kernel:        v.Kernel,
		Personality:   v.Personality,
	}
}

// NICVersionsFromProto decodes m.
func NICVersionsFromProto(m *luminav1.NICVersions) (nic.Versions, error) {
	var d decoder
	if d.nilMsg("NICVersions", m == nil) {
		return nic.Versions{}, d.err
	}
	return nic.Versions{
		IfName:        m.GetIfName(),
		IBDev:         m.GetIbDev(),
		PCIAddr:       m.GetPciAddr(),
		Driver:        m.GetDriver(),
		DriverVersion: m.GetDriverVersion(),
		Firmware:      m.GetFirmware(),
		HCAType:       m.GetHcaType(),
		BoardID:       m.GetBoardId(),
		Kernel:        m.GetKernel(),
		Personality:   m.GetPersonality(),
	}, nil
}

// ---- software RNIC ----

// RNICConfigToProto encodes c; the personality travels as a personality
// file (softrnic.MarshalPersonality).
func RNICConfigToProto(c softrnic.Config) *luminav1.RNICConfig {
	m := &luminav1.RNICConfig{
		Name:                 c.Name,
		Mac:                  slices.Clone(c.MAC[:]),
		PersonalityYaml:      softrnic.MarshalPersonality(c.Personality),
		Seed:                 c.Seed,
		DisableRp:            c.DisableRP,
		DisableNp:            c.DisableNP,
		MinTimeBetweenCnpsNs: int64(c.MinTimeBetweenCNPs),
		CnpScope:             luminav1.CNPScope(c.CNPScope),
		AdaptiveRetrans:      c.AdaptiveRetrans,
		SlowRestart:          c.SlowRestart,
	}
	for _, ip := range c.IPs {
		m.Ips = append(m.Ips, ip.String())
	}
	if p := c.PFC; p != nil {
		m.Pfc = &luminav1.RNICPFC{Priorities: uint32(p.Priorities), DscpToPriority: slices.Clone(p.DSCPToPriority[:]), PageSize: int64(p.PageSize)}
	}
	if o := c.ODP; o != nil {
		m.Odp = &luminav1.RNICODP{PageFaultNs: int64(o.PageFault), Prefetch: o.Prefetch}
	}
	m.OdpInTest = c.ODPInTest
	return m
}

// RNICConfigFromProto decodes m: mac must be 6 bytes, every IP must parse,
// and the personality file must parse (softrnic.ParsePersonality, which
// also validates it).
func RNICConfigFromProto(m *luminav1.RNICConfig) (softrnic.Config, error) {
	var d decoder
	return done(d.rnicConfig("RNICConfig", m), &d)
}

func (d *decoder) rnicConfig(f string, m *luminav1.RNICConfig) softrnic.Config {
	if d.nilMsg(f, m == nil) {
		return softrnic.Config{}
	}
	c := softrnic.Config{
		Name:               m.GetName(),
		Seed:               m.GetSeed(),
		DisableRP:          m.GetDisableRp(),
		DisableNP:          m.GetDisableNp(),
		MinTimeBetweenCNPs: time.Duration(m.GetMinTimeBetweenCnpsNs()),
		CNPScope:           softrnic.CNPScope(d.enum(f+".cnp_scope", m.GetCnpScope())),
		AdaptiveRetrans:    m.GetAdaptiveRetrans(),
		SlowRestart:        m.GetSlowRestart(),
		ODPInTest:          m.GetOdpInTest(),
	}
	if om := m.GetOdp(); om != nil {
		if om.GetPageFaultNs() < 0 {
			d.failf(f+".odp.page_fault_ns", "%d is negative", om.GetPageFaultNs())
		}
		c.ODP = &softrnic.ODPConfig{PageFault: time.Duration(om.GetPageFaultNs()), Prefetch: om.GetPrefetch()}
	}
	if mac := m.GetMac(); len(mac) != 6 {
		d.failf(f+".mac", "%d bytes, want 6", len(mac))
	} else {
		c.MAC = [6]byte(mac)
	}
	for i, s := range m.GetIps() {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			d.fail(index(f+".ips", i), err)
		}
		c.IPs = append(c.IPs, ip)
	}
	p, err := PersonalityFromYAML(m.GetPersonalityYaml())
	if err != nil {
		d.fail(f+".personality_yaml", err)
	}
	c.Personality = p
	if pm := m.GetPfc(); pm != nil {
		pc := &softrnic.PFCConfig{PageSize: int(pm.GetPageSize())}
		if v := pm.GetPriorities(); v > 0xFF {
			d.failf(f+".pfc.priorities", "%#x is not an 8-bit priority bitmap", v)
		} else {
			pc.Priorities = uint8(v)
		}
		if m := pm.GetDscpToPriority(); len(m) != 64 {
			d.failf(f+".pfc.dscp_to_priority", "%d bytes, want 64", len(m))
		} else {
			for i, v := range m {
				if v > 7 {
					d.failf(index(f+".pfc.dscp_to_priority", i), "priority %d, want 0..7", v)
				}
				pc.DSCPToPriority[i] = v
			}
		}
		if pc.PageSize < 0 {
			d.failf(f+".pfc.page_size", "%d, want ≥ 0", pc.PageSize)
		}
		c.PFC = pc
	}
	return c
}

// PersonalityFromYAML parses a personality file (softrnic.ParsePersonality,
// which validates it). Empty data is the zero Personality.
func PersonalityFromYAML(data []byte) (softrnic.Personality, error) {
	if len(data) == 0 {
		return softrnic.Personality{}, nil
	}
	// The file name "" keeps an empty name empty (ParsePersonality would
	// name the personality after its file); its errors then read
	// ": line 3: ...", hence the prefix without a colon.
	p, err := softrnic.ParsePersonality("", data)
	if err != nil {
		return softrnic.Personality{}, fmt.Errorf("personality file%w", err)
	}
	if len(p.Adaptive) == 0 {
		p.Adaptive = nil
	}
	return p, nil
}

// ---- generator ----

// TrafficToProto encodes t.
func TrafficToProto(t generator.Traffic) *luminav1.Traffic {
	return &luminav1.Traffic{
		Verb:        string(t.Verb),
		NumQps:      int64(t.NumQPs),
		NumReadQps:  int64(t.NumReadQPs),
		MsgsPerQp:   int64(t.MsgsPerQP),
		MsgSize:     int64(deref(t.MsgSize)),
		MsgSizeSet:  t.MsgSize != nil,
		Mtu:         int64(t.MTU),
		TxDepth:     int64(t.TxDepth),
		Barrier:     t.Barrier,
		MultiGid:    t.MultiGID,
		Timeout:     uint32(deref(t.Timeout)),
		TimeoutSet:  t.Timeout != nil,
		RetryCnt:    uint32(deref(t.RetryCnt)),
		RetryCntSet: t.RetryCnt != nil,
		Dscp:        int64s(t.DSCP),
		WithImm:     t.WithImm,

		MinRnrTimer:    uint32(deref(t.MinRNRTimer)),
		MinRnrTimerSet: t.MinRNRTimer != nil,
		RnrRetry:       uint32(deref(t.RNRRetry)),
		RnrRetrySet:    t.RNRRetry != nil,
		PostIntervalNs: t.PostIntervalNs,
	}
}

// TrafficFromProto decodes m; an empty dscp is a nil DSCP.
func TrafficFromProto(m *luminav1.Traffic) (generator.Traffic, error) {
	var d decoder
	return done(d.traffic("Traffic", m), &d)
}

func (d *decoder) traffic(f string, m *luminav1.Traffic) generator.Traffic {
	if d.nilMsg(f, m == nil) {
		return generator.Traffic{}
	}
	return generator.Traffic{
		Verb:       d.verb(f+".verb", m.GetVerb()),
		NumQPs:     d.int(f+".num_qps", m.GetNumQps()),
		NumReadQPs: d.int(f+".num_read_qps", m.GetNumReadQps()),
		MsgsPerQP:  d.int(f+".msgs_per_qp", m.GetMsgsPerQp()),
		MsgSize:    opt(d.int(f+".msg_size", m.GetMsgSize()), m.GetMsgSizeSet()),
		MTU:        d.int(f+".mtu", m.GetMtu()),
		TxDepth:    d.int(f+".tx_depth", m.GetTxDepth()),
		Barrier:    m.GetBarrier(),
		MultiGID:   m.GetMultiGid(),
		Timeout:    opt(d.uint8(f+".timeout", m.GetTimeout()), m.GetTimeoutSet()),
		RetryCnt:   opt(d.uint8(f+".retry_cnt", m.GetRetryCnt()), m.GetRetryCntSet()),
		DSCP:       d.ints(f+".dscp", m.GetDscp()),
		WithImm:    m.GetWithImm(),

		MinRNRTimer:    opt(d.uint8(f+".min_rnr_timer", m.GetMinRnrTimer()), m.GetMinRnrTimerSet()),
		RNRRetry:       opt(d.uint8(f+".rnr_retry", m.GetRnrRetry()), m.GetRnrRetrySet()),
		PostIntervalNs: m.GetPostIntervalNs(),
	}
}

// The proto's optional generator fields are a value and a _set flag (the
// wire format older agents speak); the generator's are pointers, nil unset.

// deref is *p, or the zero value for nil.
func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// opt is &v if set, else nil.
func opt[T any](v T, set bool) *T {
	if !set {
		return nil
	}
	return &v
}

// ResultToProto encodes r.
func ResultToProto(r generator.Result) *luminav1.Result {
	m := &luminav1.Result{
		Verb:        string(r.Verb),
		Bytes:       r.Bytes,
		DurationNs:  r.DurationNs,
		GoodputGbps: r.GoodputGbps,
		Errors:      cloneSlice(r.Errors),
		Connections: ConnectionsToProto(r.Connections),
		Counters:    cloneMap(r.Counters),
	}
	for _, q := range r.QPs {
		m.Qps = append(m.Qps, QPResultToProto(q))
	}
	if r.Responder != nil {
		m.Responder = ResponderStatsToProto(*r.Responder)
	}
	return m
}

// ResultFromProto decodes m; an unset responder is a nil Responder.
func ResultFromProto(m *luminav1.Result) (generator.Result, error) {
	var d decoder
	return done(d.result("Result", m), &d)
}

func (d *decoder) result(f string, m *luminav1.Result) generator.Result {
	if d.nilMsg(f, m == nil) {
		return generator.Result{}
	}
	r := generator.Result{
		Verb:        d.verb(f+".verb", m.GetVerb()),
		Bytes:       m.GetBytes(),
		DurationNs:  m.GetDurationNs(),
		GoodputGbps: m.GetGoodputGbps(),
		Errors:      cloneSlice(m.GetErrors()),
		Connections: d.connections(f+".connections", m.GetConnections()),
		Counters:    cloneMap(m.GetCounters()),
	}
	for i, q := range m.GetQps() {
		r.QPs = append(r.QPs, d.qpResult(index(f+".qps", i), q))
	}
	if m.GetResponder() != nil {
		s := d.responderStats(f+".responder", m.GetResponder())
		r.Responder = &s
	}
	return r
}

// QPResultToProto encodes q.
func QPResultToProto(q generator.QPResult) *luminav1.QPResult {
	return &luminav1.QPResult{
		Index:               int64(q.Index),
		Posted:              int64(q.Posted),
		Completed:           int64(q.Completed),
		Errors:              int64(q.Errors),
		MessageCompletionNs: cloneSlice(q.MCTNs),
		AvgMctNs:            q.AvgMCTNs,
	}
}

// QPResultFromProto decodes m.
func QPResultFromProto(m *luminav1.QPResult) (generator.QPResult, error) {
	var d decoder
	return done(d.qpResult("QPResult", m), &d)
}

func (d *decoder) qpResult(f string, m *luminav1.QPResult) generator.QPResult {
	if d.nilMsg(f, m == nil) {
		return generator.QPResult{}
	}
	return generator.QPResult{
		Index:     d.int(f+".index", m.GetIndex()),
		Posted:    d.int(f+".posted", m.GetPosted()),
		Completed: d.int(f+".completed", m.GetCompleted()),
		Errors:    d.int(f+".errors", m.GetErrors()),
		MCTNs:     cloneSlice(m.GetMessageCompletionNs()),
		AvgMCTNs:  m.GetAvgMctNs(),
	}
}

// ResponderStatsToProto encodes s.
func ResponderStatsToProto(s generator.ResponderStats) *luminav1.ResponderStats {
	return &luminav1.ResponderStats{
		RecvCompletions: int64(s.RecvCompletions),
		RecvErrors:      int64(s.RecvErrors),
		Verified:        s.Verified,
		BadQps:          int64s(s.BadQPs),
		Counters:        cloneMap(s.Counters),
	}
}

// ResponderStatsFromProto decodes m.
func ResponderStatsFromProto(m *luminav1.ResponderStats) (generator.ResponderStats, error) {
	var d decoder
	return done(d.responderStats("ResponderStats", m), &d)
}

func (d *decoder) responderStats(f string, m *luminav1.ResponderStats) generator.ResponderStats {
	if d.nilMsg(f, m == nil) {
		return generator.ResponderStats{}
	}
	return generator.ResponderStats{
		RecvCompletions: d.int(f+".recv_completions", m.GetRecvCompletions()),
		RecvErrors:      d.int(f+".recv_errors", m.GetRecvErrors()),
		Verified:        m.GetVerified(),
		BadQPs:          d.ints(f+".bad_qps", m.GetBadQps()),
		Counters:        cloneMap(m.GetCounters()),
	}
}

// ConnectionsToProto encodes cs (InstallRequest.connections).
func ConnectionsToProto(cs []generator.Connection) []*luminav1.Connection {
	var out []*luminav1.Connection
	for _, c := range cs {
		out = append(out, ConnectionToProto(c))
	}
	return out
}

// ConnectionsFromProto decodes ms; errors name "connections[i]...". No
// connections is nil.
func ConnectionsFromProto(ms []*luminav1.Connection) ([]generator.Connection, error) {
	var d decoder
	return done(d.connections("connections", ms), &d)
}

func (d *decoder) connections(f string, ms []*luminav1.Connection) []generator.Connection {
	var out []generator.Connection
	for i, m := range ms {
		out = append(out, d.connection(index(f, i), m))
	}
	return out
}

// ConnectionToProto encodes c.
func ConnectionToProto(c generator.Connection) *luminav1.Connection {
	return &luminav1.Connection{
		Index:     int64(c.Index),
		Verb:      string(c.Verb),
		Requester: EndpointToProto(c.Requester),
		Responder: EndpointToProto(c.Responder),
		Flow:      c.Flow,
	}
}

// ConnectionFromProto decodes m; both endpoints are required.
func ConnectionFromProto(m *luminav1.Connection) (generator.Connection, error) {
	var d decoder
	return done(d.connection("Connection", m), &d)
}

func (d *decoder) connection(f string, m *luminav1.Connection) generator.Connection {
	if d.nilMsg(f, m == nil) {
		return generator.Connection{}
	}
	return generator.Connection{
		Index:     d.int(f+".index", m.GetIndex()),
		Verb:      d.verb(f+".verb", m.GetVerb()),
		Requester: d.endpoint(f+".requester", m.GetRequester()),
		Responder: d.endpoint(f+".responder", m.GetResponder()),
		Flow:      m.GetFlow(),
	}
}

// EndpointToProto encodes e.
func EndpointToProto(e generator.Endpoint) *luminav1.Endpoint {
	return &luminav1.Endpoint{
		Ip:   e.IP.String(),
		Mac:  e.MAC.String(),
		Qpn:  e.QPN,
		Ipsn: e.IPSN,
		Addr: e.Addr,
		Rkey: e.RKey,
		Len:  int64(e.Len),
	}
}

// EndpointFromProto decodes m: ip must be an IP address and mac a 6-byte
// MAC address, parsed here once (#30 §6).
func EndpointFromProto(m *luminav1.Endpoint) (generator.Endpoint, error) {
	var d decoder
	return done(d.endpoint("Endpoint", m), &d)
}

func (d *decoder) endpoint(f string, m *luminav1.Endpoint) generator.Endpoint {
	if d.nilMsg(f, m == nil) {
		return generator.Endpoint{}
	}
	ip, err := netip.ParseAddr(m.GetIp())
	if err != nil {
		d.fail(f+".ip", err)
	}
	mac, err := roce.ParseMAC(m.GetMac())
	if err != nil {
		d.fail(f+".mac", err)
	}
	return generator.Endpoint{
		IP:   ip,
		MAC:  mac,
		QPN:  m.GetQpn(),
		IPSN: m.GetIpsn(),
		Addr: m.GetAddr(),
		RKey: m.GetRkey(),
		Len:  d.int(f+".len", m.GetLen()),
	}
}

// ---- injector ----

// InjectorTimingToProto encodes t (whose durations are never negative).
func InjectorTimingToProto(t injector.Timing) *luminav1.InjectorTimingResponse {
	return &luminav1.InjectorTimingResponse{
		Frames:     t.Frames,
		LateP50Ns:  uint64(max(0, t.LateP50)),
		LateP99Ns:  uint64(max(0, t.LateP99)),
		LateMaxNs:  uint64(max(0, t.LateMax)),
		ClampMaxNs: uint64(max(0, t.ClampMax)),
		SentMaxNs:  uint64(max(0, t.SentMax)),
	}
}

// InjectorTimingFromProto decodes m.
func InjectorTimingFromProto(m *luminav1.InjectorTimingResponse) (injector.Timing, error) {
	var d decoder
	return done(d.injectorTiming("InjectorTimingResponse", m), &d)
}

func (d *decoder) injectorTiming(f string, m *luminav1.InjectorTimingResponse) injector.Timing {
	if d.nilMsg(f, m == nil) {
		return injector.Timing{}
	}
	return injector.Timing{
		Frames:   m.GetFrames(),
		LateP50:  d.duration(f+".late_p50_ns", m.GetLateP50Ns()),
		LateP99:  d.duration(f+".late_p99_ns", m.GetLateP99Ns()),
		LateMax:  d.duration(f+".late_max_ns", m.GetLateMaxNs()),
		ClampMax: d.duration(f+".clamp_max_ns", m.GetClampMaxNs()),
		SentMax:  d.duration(f+".sent_max_ns", m.GetSentMaxNs()),
	}
}

// ---- PFC ----

// SwitchPFCToProto encodes c (nil: nil).
func SwitchPFCToProto(c *injector.PFCConfig) *luminav1.SwitchPFC {
	if c == nil {
		return nil
	}
	m := &luminav1.SwitchPFC{Lossless: uint32(c.Lossless), DscpToPriority: slices.Clone(c.DSCPToPriority[:]),
		XoffBytes: int64(c.XOFFBytes), XonBytes: int64(c.XONBytes), HeadroomBytes: int64(c.HeadroomBytes), Mac: slices.Clone(c.MAC[:])}
	if len(c.PortBps) > 0 {
		m.PortBps = maps.Clone(c.PortBps)
	}
	if w := c.Watchdog; w != nil {
		m.Watchdog, m.WatchdogDetectionNs, m.WatchdogRestorationNs = true, int64(w.Detection), int64(w.Restoration)
	}
	if len(c.WatchdogPorts) > 0 {
		m.WatchdogPorts = map[uint32]*luminav1.PortWatchdog{}
		for port, w := range c.WatchdogPorts {
			pw := &luminav1.PortWatchdog{}
			if w != nil {
				pw.Watchdog, pw.DetectionNs, pw.RestorationNs = true, int64(w.Detection), int64(w.Restoration)
			}
			m.WatchdogPorts[port] = pw
		}
	}
	return m
}

// SwitchPFCFromProto decodes m: the DSCP map is 64 priorities 0..7, the
// MAC 6 bytes (or empty), the lossless bitmap 8 bits, nothing negative.
func SwitchPFCFromProto(m *luminav1.SwitchPFC) (*injector.PFCConfig, error) {
	c := &injector.PFCConfig{XOFFBytes: int(m.GetXoffBytes()), XONBytes: int(m.GetXonBytes()), HeadroomBytes: int(m.GetHeadroomBytes())}
	if v := m.GetLossless(); v > 0xFF {
		return nil, fmt.Errorf("%w: SwitchPFC.lossless %#x is not an 8-bit bitmap", ErrWire, v)
	} else {
		c.Lossless = uint8(v)
	}
	d := m.GetDscpToPriority()
	if len(d) != 64 {
		return nil, fmt.Errorf("%w: SwitchPFC.dscp_to_priority: %d bytes, want 64", ErrWire, len(d))
	}
	for i, v := range d {
		if v > 7 {
			return nil, fmt.Errorf("%w: SwitchPFC.dscp_to_priority[%d]: priority %d, want 0..7", ErrWire, i, v)
		}
		c.DSCPToPriority[i] = v
	}
	switch mac := m.GetMac(); len(mac) {
	case 0:
	case 6:
		c.MAC = [6]byte(mac)
	default:
		return nil, fmt.Errorf("%w: SwitchPFC.mac: %d bytes, want 6", ErrWire, len(mac))
	}
	for port, bps := range m.GetPortBps() {
		if bps <= 0 || port > 511 {
			return nil, fmt.Errorf("%w: SwitchPFC.port_bps[%d] = %d", ErrWire, port, bps)
		}
	}
	if len(m.GetPortBps()) > 0 {
		c.PortBps = maps.Clone(m.GetPortBps())
	}
	if m.GetWatchdog() {
		if m.GetWatchdogDetectionNs() < 0 || m.GetWatchdogRestorationNs() < 0 {
			return nil, fmt.Errorf("%w: SwitchPFC: negative watchdog time", ErrWire)
		}
		c.Watchdog = &injector.PFCWatchdog{Detection: time.Duration(m.GetWatchdogDetectionNs()), Restoration: time.Duration(m.GetWatchdogRestorationNs())}
	}
	for port, pw := range m.GetWatchdogPorts() {
		if port > 511 || pw.GetDetectionNs() < 0 || pw.GetRestorationNs() < 0 {
			return nil, fmt.Errorf("%w: SwitchPFC.watchdog_ports[%d]: port above 511 or a negative time", ErrWire, port)
		}
		if c.WatchdogPorts == nil {
			c.WatchdogPorts = map[uint32]*injector.PFCWatchdog{}
		}
		c.WatchdogPorts[port] = nil
		if pw.GetWatchdog() {
			c.WatchdogPorts[port] = &injector.PFCWatchdog{Detection: time.Duration(pw.GetDetectionNs()), Restoration: time.Duration(pw.GetRestorationNs())}
		}
	}
	return c, nil
}

// PauseInjectionToProto encodes p.
func PauseInjectionToProto(p injector.PauseInjection) *luminav1.PauseInjection {
	m := &luminav1.PauseInjection{Port: p.Port, Priority: uint32(p.Priority), Quanta: uint32(p.Quanta),
		StartNs: int64(p.Start), DurationNs: int64(p.Duration), IntervalNs: int64(p.Interval)}
	if t := p.Trigger; t != nil {
		m.HasTrigger, m.TriggerPort, m.TriggerDestQp, m.TriggerPsn, m.TriggerIter = true, t.Port, t.DestQP, t.PSN, uint32(t.Iter)
	}
	return m
}

// PauseInjectionFromProto decodes m; SchedulePauses checks the values.
func PauseInjectionFromProto(m *luminav1.PauseInjection) injector.PauseInjection {
	p := injector.PauseInjection{Port: m.GetPort(), Priority: int(min(m.GetPriority(), 1<<16)), Quanta: uint16(min(m.GetQuanta(), 0xFFFF)),
		Start: time.Duration(m.GetStartNs()), Duration: time.Duration(m.GetDurationNs()), Interval: time.Duration(m.GetIntervalNs())}
	if m.GetHasTrigger() {
		p.Trigger = &injector.PauseTrigger{Port: m.GetTriggerPort(), DestQP: m.GetTriggerDestQp(), PSN: m.GetTriggerPsn(), Iter: uint16(min(m.GetTriggerIter(), 0xFFFF))}
	}
	return p
}

// SwitchPFCStatus is the switch's PFC counters by port and priority, and
// its watchdog log.
type SwitchPFCStatus struct {
	Counters map[uint32][roce.PFCPriorities]injector.PFCCounters
	Log      []injector.PFCEvent
}

// InjectorPFCToProto encodes the counters (ports in order; priorities
// with every counter zero left out) and the log.
func InjectorPFCToProto(ctr map[uint32][roce.PFCPriorities]injector.PFCCounters, log []injector.PFCEvent) *luminav1.InjectorPFCResponse {
	m := &luminav1.InjectorPFCResponse{}
	for _, port := range slices.Sorted(maps.Keys(ctr)) {
		for prio, c := range ctr[port] {
			if c == (injector.PFCCounters{}) {
				continue
			}
			m.Ports = append(m.Ports, &luminav1.PortPFC{Port: port, Priority: uint32(prio), RxPause: c.RxPause, TxPause: c.TxPause,
				Xoff: c.XOFF, Xon: c.XON, RxPauseNs: c.RxPauseNs, LosslessDrops: c.LosslessDrops, LossyDrops: c.LossyDrops,
				WatchdogDrops: c.WatchdogDrops, Storms: c.Storms, Restores: c.Restores})
		}
	}
	for _, e := range log {
		m.Log = append(m.Log, &luminav1.PFCLogEvent{AtNs: int64(e.At), Port: e.Port, Priority: uint32(e.Priority), Kind: e.Kind.String()})
	}
	return m
}

// InjectorPFCFromProto decodes InjectorPFCToProto's message: priorities
// 0..7, each watchdog event a storm or a restore.
func InjectorPFCFromProto(m *luminav1.InjectorPFCResponse) (*SwitchPFCStatus, error) {
	st := &SwitchPFCStatus{Counters: map[uint32][roce.PFCPriorities]injector.PFCCounters{}}
	for _, p := range m.GetPorts() {
		if p.GetPriority() >= roce.PFCPriorities {
			return nil, fmt.Errorf("%w: PortPFC: port %d priority %d", ErrWire, p.GetPort(), p.GetPriority())
		}
		c := st.Counters[p.GetPort()]
		c[p.GetPriority()] = injector.PFCCounters{RxPause: p.GetRxPause(), TxPause: p.GetTxPause(), XOFF: p.GetXoff(), XON: p.GetXon(),
			RxPauseNs: p.GetRxPauseNs(), LosslessDrops: p.GetLosslessDrops(), LossyDrops: p.GetLossyDrops(),
			WatchdogDrops: p.GetWatchdogDrops(), Storms: p.GetStorms(), Restores: p.GetRestores()}
		st.Counters[p.GetPort()] = c
	}
	for _, e := range m.GetLog() {
		var k injector.PFCEventKind
		switch e.GetKind() {
		case injector.PFCStorm.String():
			k = injector.PFCStorm
		case injector.PFCRestore.String():
			k = injector.PFCRestore
		default:
			return nil, fmt.Errorf("%w: PFCLogEvent.kind %q (want storm or restore)", ErrWire, e.GetKind())
		}
		st.Log = append(st.Log, injector.PFCEvent{At: time.Duration(e.GetAtNs()), Port: e.GetPort(), Priority: int(e.GetPriority()), Kind: k})
	}
	return st, nil
}
