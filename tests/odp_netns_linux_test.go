package tests

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/internal/testutil"
)

// odpSequence is the packet sequence of the trace in dir as `lumina
// decode` prints it, one "OPCODE psn+N [rnr(timer=…)]" per packet, in two
// parts: the packets the first packet's sender sent, in their order, then
// the packets the other host sent, in theirs. PSNs are relative to the
// first packet's; timestamps are left out (a real clock's), and so is how
// the two hosts' packets interleave: on a real clock a response can reach
// the switch before a request its requester sent right behind the one it
// answers (a scheduling delay of tens of µs), which changes no decision of
// either model. What each host sends, and in which order, is the models'.
func odpSequence(t *testing.T, dir string) []string {
	t.Helper()
	r := lumina(t, "decode", filepath.Join(dir, "trace.pcap"))
	var first, other []string
	base, firstSrc := -1, ""
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[3] != ">" || !strings.HasPrefix(f[7], "psn=") {
			t.Fatalf("decode line %q: want INDEX TIME SRC > DST OPCODE qp= psn= ...", line)
		}
		psn, err := strconv.Atoi(strings.TrimPrefix(f[7], "psn="))
		if err != nil {
			t.Fatalf("decode line %q: %v", line, err)
		}
		src, _, _ := strings.Cut(f[2], ":")
		if base < 0 {
			base, firstSrc = psn, src
		}
		s := f[5] + " psn+" + strconv.Itoa(psn-base)
		if i := strings.Index(line, " rnr(timer="); i >= 0 {
			s += " " + strings.Fields(line[i:])[0]
		}
		if src == firstSrc {
			first = append(first, "> "+s)
		} else {
			other = append(other, "< "+s)
		}
	}
	return append(first, other...)
}

// TestNetnsODP runs the ODP examples (docs/odp.md) on netns: each host a
// lumina agent in its own namespace, the software RNIC on a real clock.
// Each run is valid with the sim run's packet sequence of each host
// (opcodes, relative PSNs, RNR timer codes: what the models decide, not
// the machine's timing; odpSequence)
// and the sim run's verdicts: every check passes but
// odp-two-reads' rnr, which names the second READ's silent timeout.
// The examples run at netns-slowdown 50, so that the gaps the model leaves
// between requests (the duplicate READ served for 80 µs) stay on the
// models' clock under the machine's scheduling.
func TestNetnsODP(t *testing.T) {
	testutil.RequireNetns(t)
	for _, name := range []string{"odp-remote", "odp-local", "odp-remote-local", "odp-two-reads", "odp-three-reads"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "examples", "odp", name+".yaml")
			simOut, netOut := t.TempDir(), t.TempDir()
			code := 0
			if name == "odp-two-reads" {
				code = 1
			}
			luminaExit(t, code, "run", "-q", "-o", simOut, file)
			r := luminaExit(t, code, "run", "-q", "-o", netOut, "--testbed", "netns", file)
			if !strings.HasPrefix(r.stdout, name+" repeat 0: valid, ") || r.stderr != "" {
				t.Fatalf("lumina run --testbed netns: stdout %q, stderr %q; want a valid run", r.stdout, r.stderr)
			}
			dir := filepath.Join(netOut, name, "0")
			want, got := odpSequence(t, filepath.Join(simOut, name, "0")), odpSequence(t, dir)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("netns sequence\n%s\nwant (sim)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			rep := readReport(t, dir)
			if !reflect.DeepEqual(rep.Integrity.Checks, integrityAll) {
				t.Errorf("integrity %+v, want %v", rep.Integrity, integrityAll)
			}
			var wantFail []string
			if name == "odp-two-reads" {
				wantFail = []string{"rnr"}
				d := rep.Checks["rnr"].Detail
				if !strings.Contains(d, "1 silent timeouts") || !strings.Contains(d, "(rel 1) stalled ") {
					t.Errorf("checks.rnr detail %q: want the second READ's (rel 1) silent timeout", d)
				}
			} else {
				checkVerdict(t, rep, "rnr", model.Pass, "")
			}
			if f := rep.Verdicts("fail"); !reflect.DeepEqual(f, wantFail) {
				t.Errorf("failed checks %v, want %v: %+v", f, wantFail, rep.Checks)
			}
		})
	}
}
