// Package store keeps lumina's results as partitioned Parquet tables under
// a results root, for a lab of testbeds running suites over years of
// firmware builds (issue #34; FD.io CSIT keeps its results the same way):
//
//	ROOT/runs/nic=N/firmware=F/date=YYYY-MM-DD/job-ID.parquet    one row per repeat
//	ROOT/losses/nic=N/firmware=F/date=YYYY-MM-DD/job-ID.parquet  one row per loss
//
// The directories are Hive-style partitions (any engine that reads Hive
// partitioning — DuckDB's read_parquet(..., hive_partitioning = true),
// Spark, pyarrow — gets nic, firmware and date as columns); the files do
// not repeat them. A job's rows are one file per table: storing a job again
// (a redelivered job) replaces the files of its earlier attempt, in
// whatever partition they were. See docs/lab-results.md, "Results and queries".
package store

import (
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/suite"
)

// Table names: the directories under the results root.
const (
	TableRuns   = "runs"
	TableLosses = "losses"
)

// Partition keys, in directory order.
var partitionKeys = []string{"nic", "firmware", "date"}

// RunRow is one row of the runs table: one repeat of one test.
type RunRow struct {
	JobID string `parquet:"job_id"`
	// Time is when the job's results were stored (UTC); its day is the
	// date partition.
	Time    time.Time         `parquet:"time,timestamp(millisecond)"`
	Test    string            `parquet:"test"`
	File    string            `parquet:"file"`
	Testbed string            `parquet:"testbed"`
	Labels  map[string]string `parquet:"labels"`
	Seed    uint64            `parquet:"seed"`
	Repeat  int64             `parquet:"repeat"`
	// RepeatSet, Worker and Delivery are the lab's (Job).
	RepeatSet int64  `parquet:"repeat_set"`
	Worker    string `parquet:"worker"`
	Delivery  int64  `parquet:"delivery"`
	// Dir is the repeat's run directory as it was stored from (or under
	// Job.DirBase).
	Dir   string `parquet:"dir"`
	Valid bool   `parquet:"valid"`
	// Verdict is the repeat's: fail when a check failed, else pass
	// (invalid: the integrity check failed, so fail too).
	Verdict string `parquet:"verdict"`
	// Checks is every check's verdict (pass, fail, skip, inconclusive).
	Checks map[string]string `parquet:"checks"`
	// Failed lists the checks that failed, sorted.
	Failed []string `parquet:"failed,list"`
	// NICs is each traffic host's identity by role.
	NICs []NICRow `parquet:"nics,list"`
	// Violations ("side/rule" per Go-back-N violation), counter relations
	// that agreed or not ("nic/counter"), the CNP scopes: as `lumina diff`
	// compares them (docs/regression.md), of valid repeats only.
	Violations       []string `parquet:"violations,list"`
	CountersOK       []string `parquet:"counters_ok,list"`
	CountersMismatch []string `parquet:"counters_mismatch,list"`
	CNPDecided       bool     `parquet:"cnp_decided"`
	CNPScopes        []string `parquet:"cnp_scopes,list"`
	// The regression quantities (suite.Quantities), each the repeat's
	// values in measurement order; empty when not measured.
	NACKGenerationNs      []float64 `parquet:"nack_generation_ns,list"`
	NACKReactionNs        []float64 `parquet:"nack_reaction_ns,list"`
	RetransmissionNs      []float64 `parquet:"retransmission_ns,list"`
	TimeoutIntervalNs     []float64 `parquet:"timeout_interval_ns,list"`
	TimeoutRetries        []float64 `parquet:"timeout_retries,list"`
	CNPsObserved          []float64 `parquet:"cnps_observed,list"`
	CNPsExpectedPerQP     []float64 `parquet:"cnps_expected_per_qp,list"`
	CNPsExpectedPerPort   []float64 `parquet:"cnps_expected_per_port,list"`
	CNPsExpectedPerDestIP []float64 `parquet:"cnps_expected_per_dest_ip,list"`
	CNPsExpectedPerIPPair []float64 `parquet:"cnps_expected_per_ip_pair,list"`
	MessageCompletionNs   []float64 `parquet:"message_completion_ns,list"`
	GoodputGbps           []float64 `parquet:"goodput_gbps,list"`
}

// NICRow is one traffic host's RNIC identity (suite.Identity).
type NICRow struct {
	Role          string `parquet:"role"`
	Personality   string `parquet:"personality"`
	Driver        string `parquet:"driver"`
	DriverVersion string `parquet:"driver_version"`
	Firmware      string `parquet:"firmware"`
}

// quantities maps each suite quantity to its column of r.
func (r *RunRow) quantities() map[string]*[]float64 {
	return map[string]*[]float64{
		"nack_generation_ns":        &r.NACKGenerationNs,
		"nack_reaction_ns":          &r.NACKReactionNs,
		"retransmission_ns":         &r.RetransmissionNs,
		"timeout_interval_ns":       &r.TimeoutIntervalNs,
		"timeout_retries":           &r.TimeoutRetries,
		"cnps_observed":             &r.CNPsObserved,
		"cnps_expected_per_qp":      &r.CNPsExpectedPerQP,
		"cnps_expected_per_port":    &r.CNPsExpectedPerPort,
		"cnps_expected_per_dest_ip": &r.CNPsExpectedPerDestIP,
		"cnps_expected_per_ip_pair": &r.CNPsExpectedPerIPPair,
		"message_completion_ns":     &r.MessageCompletionNs,
		"goodput_gbps":              &r.GoodputGbps,
	}
}

// LossRow is one row of the losses table: one loss of one repeat with its
// latency breakdown (report.json analysis.checks.retransmission.losses,
// docs/analyze.md); latencies not measured are null.
type LossRow struct {
	JobID   string            `parquet:"job_id"`
	Time    time.Time         `parquet:"time,timestamp(millisecond)"`
	Test    string            `parquet:"test"`
	Testbed string            `parquet:"testbed"`
	Labels  map[string]string `parquet:"labels"`
	Seed    uint64            `parquet:"seed"`
	Repeat  int64             `parquet:"repeat"`
	// Loss is the loss's position in the repeat's report (0-based).
	Loss                      int64  `parquet:"loss"`
	Conn                      int64  `parquet:"conn"`
	PSN                       int64  `parquet:"psn"`
	RelPSN                    int64  `parquet:"rel_psn"`
	Iter                      int64  `parquet:"iter"`
	Index                     int64  `parquet:"index"`
	TimeNs                    int64  `parquet:"time_ns"`
	Event                     string `parquet:"event"`
	Kind                      string `parquet:"kind"`
	NAKPSN                    *int64 `parquet:"nak_psn,optional"`
	NACKGenerationNs          *int64 `parquet:"nack_generation_ns,optional"`
	NACKReactionNs            *int64 `parquet:"nack_reaction_ns,optional"`
	RetransmissionNs          *int64 `parquet:"retransmission_ns,optional"`
	NextDeliveredNs           *int64 `parquet:"next_delivered_ns,optional"`
	NACKGenerationCorrectedNs *int64 `parquet:"nack_generation_corrected_ns,optional"`
	NACKReactionCorrectedNs   *int64 `parquet:"nack_reaction_corrected_ns,optional"`
	ReissueResponseNs         *int64 `parquet:"reissue_response_ns,optional"`
	RetxIndex                 int64  `parquet:"retx_index"`
}

// repeatOf is the suite.Repeat a runs row holds.
func (r *RunRow) repeatOf() suite.Repeat {
	rp := suite.Repeat{Test: r.Test, File: r.File, Testbed: r.Testbed, Seed: r.Seed, Repeat: int(r.Repeat), Dir: r.Dir,
		Valid: r.Valid, NIC: map[string]suite.Identity{}, Checks: map[string]model.Verdict{},
		Violations: r.Violations, CountersOK: r.CountersOK, CountersMismatch: r.CountersMismatch,
		CNPDecided: r.CNPDecided, CNPScopes: r.CNPScopes, Quantities: map[string][]float64{}}
	for _, n := range r.NICs {
		rp.NIC[n.Role] = suite.Identity{Personality: n.Personality, Driver: n.Driver, DriverVersion: n.DriverVersion, Firmware: n.Firmware}
	}
	for k, v := range r.Checks {
		rp.Checks[k] = model.Verdict(v)
	}
	for name, col := range r.quantities() {
		if len(*col) > 0 {
			rp.Quantities[name] = *col
		}
	}
	return rp
}
