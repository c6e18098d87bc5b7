package nic

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ROCE_ACCL fields Configure sets (NVIDIA's ConnectX mlxreg ROCE_ACCL register: the MLNX_OFED "ROCE ACCL" documentation).
const (
	fieldAdpRetrans   = "roce_adp_retrans_en"
	fieldSlowRestart  = "roce_slow_restart_en"
	selectAdpRetrans  = "roce_adp_retrans_field_select"
	selectSlowRestart = "roce_slow_restart_field_select"
)

func (h *Host) planMellanox(ctx context.Context, dev Device, p Params) ([]step, error) {
	var steps []step
	var errs multiError
	add := func(s step, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		steps = append(steps, s)
	}
	if p.Trust != "" || p.DSCP2Prio != nil {
		qs, err := h.qosSteps(ctx, dev, p)
		if err != nil {
			errs = append(errs, err)
		}
		steps = append(steps, qs...)
	}
	ecn := "/sys/class/net/" + dev.IfName + "/ecn/"
	add(h.sysfsStep(ecn+"roce_np/min_time_between_cnps", strconv.Itoa(p.MinTimeBetweenCNPs)))
	for prio := range 8 {
		add(h.sysfsStep(ecn+"roce_rp/enable/"+strconv.Itoa(prio), b01(p.DCQCNRPEnable)))
	}
	for prio := range 8 {
		add(h.sysfsStep(ecn+"roce_np/enable/"+strconv.Itoa(prio), b01(p.DCQCNNPEnable)))
	}
	rs, err := h.roceAcclSteps(ctx, dev, map[string]bool{fieldAdpRetrans: p.AdaptiveRetrans, fieldSlowRestart: p.SlowRestart})
	if err != nil {
		errs = append(errs, err)
	}
	steps = append(steps, rs...)
	if len(errs) > 0 {
		return nil, errs
	}
	return steps, nil
}

// multiError is every preflight problem, on one line.
type multiError []error

func (m multiError) Error() string {
	s := make([]string, len(m))
	for i, e := range m {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

func (m multiError) Unwrap() []error { return m }

// roceAcclSteps plans the ROCE_ACCL fields (name → wanted) with one query.
func (h *Host) roceAcclSteps(ctx context.Context, dev Device, want map[string]bool) ([]step, error) {
	if dev.PCIAddr == "" {
		return nil, fmt.Errorf("%w: %s: no PCI address for mlxreg (set nic.pci-addr)", ErrUnsupported, dev.IfName)
	}
	run := h.runner()
	out, err := run.Run(ctx, "mlxreg", "-d", dev.PCIAddr, "--reg_name", "ROCE_ACCL", "--get", "--yes")
	if err != nil {
		return nil, fmt.Errorf("%w: mlxreg -d %s --reg_name ROCE_ACCL --get: %w", ErrCommand, dev.PCIAddr, err)
	}
	reg, err := ParseMlxreg(out)
	if err != nil {
		return nil, err
	}
	var steps []step
	for _, f := range []struct{ field, sel string }{{fieldAdpRetrans, selectAdpRetrans}, {fieldSlowRestart, selectSlowRestart}} {
		w, ok := want[f.field]
		if !ok {
			continue
		}
		v, ok := reg[f.field]
		if !ok {
			return nil, fmt.Errorf("%w: ROCE_ACCL on %s has no field %s (firmware too old?)", ErrUnsupported, dev.PCIAddr, f.field)
		}
		if sel, ok := reg[f.sel]; ok && sel == 0 {
			return nil, fmt.Errorf("%w: ROCE_ACCL.%s on %s is not configurable (%s = 0)", ErrUnsupported, f.field, dev.PCIAddr, f.sel)
		}
		field := f.field
		steps = append(steps, step{
			what: "mlxreg " + dev.PCIAddr + " ROCE_ACCL." + field, prev: strconv.FormatUint(v, 10), want: b01(w),
			set: func(ctx context.Context, val string) error {
				_, err := run.Run(ctx, "mlxreg", "-d", dev.PCIAddr, "--reg_name", "ROCE_ACCL", "--set", field+"="+val, "--yes")
				if err != nil {
					return fmt.Errorf("%w: mlxreg --set %s=%s: %w", ErrCommand, field, val, err)
				}
				return nil
			},
		})
	}
	return steps, nil
}

// ParseMlxreg reads the field table `mlxreg --get` prints:
//
//	Field Name                    | Data
//	=============================================
//	roce_adp_retrans_field_select | 0x00000001
//	roce_adp_retrans_en           | 0x00000000
//	=============================================
//
// Lines that are not "name | number" are ignored.
func ParseMlxreg(out []byte) (map[string]uint64, error) {
	m := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), "|")
		if !ok {
			continue
		}
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		n, err := strconv.ParseUint(val, 0, 64)
		if err != nil || name == "" || strings.ContainsAny(name, " \t") {
			continue
		}
		m[name] = n
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: mlxreg printed no register fields: %q", ErrCommand, trimOut(string(out)))
	}
	return m, nil
}

// QoS is what Configure reads from `mlnx_qos -i IF`.
type QoS struct {
	Trust     string      // "pcp" or "dscp"
	DSCP2Prio map[int]int // nil if the output has no dscp2prio table
}

// ParseMlnxQoS reads the trust state and the DSCP → priority table from
// `mlnx_qos -i IF` output:
//
//	Priority trust state: dscp
//	dscp2prio mapping:
//	        prio:0 dscp:07,06,05,04,03,02,01,00,
//	        prio:1 dscp:15,14,13,12,11,10,09,08,
func ParseMlnxQoS(out []byte) (QoS, error) {
	var q QoS
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "Priority trust state:"); ok {
			q.Trust = strings.TrimSpace(v)
			continue
		}
		prioS, dscpS, ok := strings.Cut(line, " dscp:")
		if !ok || !strings.HasPrefix(prioS, "prio:") {
			continue
		}
		prio, err := strconv.Atoi(strings.TrimPrefix(prioS, "prio:"))
		if err != nil || prio < 0 || prio > 7 {
			return q, fmt.Errorf("%w: mlnx_qos: bad line %q", ErrCommand, line)
		}
		if q.DSCP2Prio == nil {
			q.DSCP2Prio = map[int]int{}
		}
		for _, f := range strings.Split(dscpS, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			d, err := strconv.Atoi(f)
			if err != nil || d < 0 || d > 63 {
				return q, fmt.Errorf("%w: mlnx_qos: bad DSCP %q in %q", ErrCommand, f, line)
			}
			q.DSCP2Prio[d] = prio
		}
	}
	if q.Trust == "" {
		return q, fmt.Errorf("%w: mlnx_qos printed no \"Priority trust state\": %q", ErrCommand, trimOut(string(out)))
	}
	return q, nil
}

func (h *Host) qosSteps(ctx context.Context, dev Device, p Params) ([]step, error) {
	run := h.runner()
	out, err := run.Run(ctx, "mlnx_qos", "-i", dev.IfName)
	if err != nil {
		return nil, fmt.Errorf("%w: mlnx_qos -i %s: %w", ErrCommand, dev.IfName, err)
	}
	q, err := ParseMlnxQoS(out)
	if err != nil {
		return nil, err
	}
	var steps []step
	if p.Trust != "" {
		steps = append(steps, step{what: "mlnx_qos " + dev.IfName + " trust", prev: q.Trust, want: p.Trust,
			set: func(ctx context.Context, v string) error {
				if _, err := run.Run(ctx, "mlnx_qos", "-i", dev.IfName, "--trust="+v); err != nil {
					return fmt.Errorf("%w: mlnx_qos --trust=%s: %w", ErrCommand, v, err)
				}
				return nil
			}})
	}
	if p.DSCP2Prio != nil {
		if q.DSCP2Prio == nil {
			// mlnx_qos may print no table (trust pcp): the driver's map is
			// then its default, priority = DSCP / 8.
			q.DSCP2Prio = DSCP2Prio(nil)
		}
		dscps := make([]int, 0, len(p.DSCP2Prio))
		for d := range p.DSCP2Prio {
			dscps = append(dscps, d)
		}
		sort.Ints(dscps)
		for _, d := range dscps {
			prev, ok := q.DSCP2Prio[d]
			if !ok {
				return nil, fmt.Errorf("%w: mlnx_qos -i %s: DSCP %d missing from the dscp2prio mapping", ErrCommand, dev.IfName, d)
			}
			steps = append(steps, step{what: fmt.Sprintf("mlnx_qos %s dscp2prio %d", dev.IfName, d),
				prev: strconv.Itoa(prev), want: strconv.Itoa(p.DSCP2Prio[d]),
				set: func(ctx context.Context, v string) error {
					arg := fmt.Sprintf("--dscp2prio=set,%d,%s", d, v)
					if _, err := run.Run(ctx, "mlnx_qos", "-i", dev.IfName, arg); err != nil {
						return fmt.Errorf("%w: mlnx_qos %s: %w", ErrCommand, arg, err)
					}
					return nil
				}})
		}
	}
	return steps, nil
}
