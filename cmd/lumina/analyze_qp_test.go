package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestAnalyzeQP checks lumina analyze --qp N: only connection N is
// analyzed, the counters check is skipped when the trace has others, and
// an index out of range is a usage error.
func TestAnalyzeQP(t *testing.T) {
	traces := filepath.Join("..", "..", "examples", "traces")
	mixed := filepath.Join(traces, "mixed.pcapng")
	type report struct {
		Connections []struct {
			ID   int    `json:"id"`
			Verb string `json:"verb"`
		} `json:"connections"`
		Checks struct {
			GBN struct {
				Verdict    string `json:"verdict"`
				Violations []struct {
					Conn int    `json:"conn"`
					Rule string `json:"rule"`
				} `json:"violations"`
			} `json:"gbn"`
			Counters struct {
				Verdict string `json:"verdict"`
				Reason  string `json:"reason"`
			} `json:"counters"`
		} `json:"checks"`
	}
	for _, tc := range []struct {
		qp   string
		want string // connections and gbn violations
	}{
		{"0", `[{"id":0,"verb":"send"}] [{"conn":0,"rule":"incomplete"}]`},
		{"1", `[{"id":1,"verb":"read"}] [{"conn":1,"rule":"unsolicited-retransmission"},{"conn":1,"rule":"incomplete"}]`},
	} {
		t.Run("qp"+tc.qp, func(t *testing.T) {
			code, out, stderr := runCLI("analyze", "--format", "json", "--qp", tc.qp, mixed)
			var r report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("analyze --qp %s = %d, %v; stderr %q", tc.qp, code, err, stderr)
			}
			c, _ := json.Marshal(r.Connections)
			v, _ := json.Marshal(r.Checks.GBN.Violations)
			if got := string(c) + " " + string(v); got != tc.want || code != 1 {
				t.Errorf("analyze --qp %s = %d, %s; want 1, %s", tc.qp, code, got, tc.want)
			}
			if want := "analyzing connection " + tc.qp + " alone: NIC counters count all 2 connections"; r.Checks.Counters.Verdict != "skip" || r.Checks.Counters.Reason != want {
				t.Errorf("analyze --qp %s counters = %s %q, want skip %q", tc.qp, r.Checks.Counters.Verdict, r.Checks.Counters.Reason, want)
			}
		})
	}

	for _, qp := range []string{"2", "99"} {
		code, out, stderr := runCLI("analyze", "--qp", qp, mixed)
		want := "lumina: analyzers: no such connection " + qp + ": the trace has 2 (0..1)\n"
		if code != 2 || out != "" || stderr != want {
			t.Errorf("analyze --qp %s = %d, %q, %q; want 2, \"\", %q", qp, code, out, stderr, want)
		}
	}
	if code, _, stderr := runCLI("analyze", "--qp", "-1", mixed); code != 2 {
		t.Errorf("analyze --qp -1 = %d (%q), want 2", code, stderr)
	}

	// With a single connection, --qp 0 is the whole analysis, counters
	// included.
	tmp := t.TempDir()
	write(t, tmp, "meta.json", []byte(`{"nics": [{"name": "responder", "ips": ["10.0.0.2"], "after": {"out_of_sequence": 1, "np_cnp_sent": 1, "np_ecn_marked_roce_packets": 1}}]}`))
	sample := filepath.Join(traces, "write-drop.pcap")
	meta := filepath.Join(tmp, "meta.json")
	code, all, _ := runCLI("analyze", "--format", "json", "--meta", meta, sample)
	codeQP, one, _ := runCLI("analyze", "--format", "json", "--meta", meta, "--qp", "0", sample)
	if code != codeQP || all != one {
		t.Errorf("analyze --qp 0 on one connection = %d, want %d and the report without --qp; diff:\n%s", codeQP, code, lineDiff(all, one))
	}
}
