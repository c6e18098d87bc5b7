package softrnic

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/sim"
)

// TestReactionPointSlowsDown marks one packet CE early in a 256 KB WRITE:
// with the reaction point enabled the sender's packet spacing grows after
// the CNP; disabled, the CNP is ignored and the spacing stays at line rate.
func TestReactionPointSlowsDown(t *testing.T) {
	for _, disable := range []bool{false, true} {
		p := newPair(t, pairOpts{reqCfg: Config{DisableRP: disable}, bufSize: 256 << 10})
		p.mutate = func(f frameRec, frame []byte) {
			if f.Dir == sim.AtoB && f.PSN == 5 && f.Round == 1 {
				frame[15] |= 3
			}
		}
		p.rq.PostSend(SendWR{Op: WRWrite, Local: p.reqMR, Length: 256 << 10, RemoteAddr: p.rspMR.Addr, RKey: p.rspMR.RKey})
		p.run(time.Second)
		var cnpAt int64 = -1
		var before, after []int64
		for _, f := range p.frames {
			switch {
			case f.Op == roce.CNP:
				cnpAt = p.arrival(f)
			case f.Dir == sim.AtoB && cnpAt < 0:
				before = append(before, f.T)
			case f.Dir == sim.AtoB && f.T > cnpAt+int64(2*time.Microsecond):
				after = append(after, f.T)
			}
		}
		if cnpAt < 0 || len(after) < 10 {
			t.Fatalf("disable=%v: CNP at %d, %d packets after", disable, cnpAt, len(after))
		}
		gapBefore := (before[len(before)-1] - before[0]) / int64(len(before)-1)
		gapAfter := (after[9] - after[0]) / 9
		c := p.req.Counters()
		if disable {
			if gapAfter != gapBefore || c.RPCNPIgnored != 1 || c.RPCNPHandled != 0 {
				t.Errorf("RP disabled: spacing %d → %d ns, handled %d ignored %d; want unchanged, 0, 1", gapBefore, gapAfter, c.RPCNPHandled, c.RPCNPIgnored)
			}
		} else if gapAfter < 3*gapBefore/2 || c.RPCNPHandled != 1 {
			t.Errorf("RP enabled: spacing %d → %d ns, handled %d; want a rate cut (≥1.5× spacing), 1", gapBefore, gapAfter, c.RPCNPHandled)
		}
		if !bytesEqualFor(WRWrite, p, 256<<10) {
			t.Error("data differs")
		}
	}
}

func TestPersonalityYAML(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "fw2.yaml")
	os.WriteFile(good, []byte("base: cx5\nname: cx5-fw2\nnak-reaction-delay: 20us\ncnp-scope: per-port\n"), 0o644)
	p, err := LoadPersonality(good)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "cx5-fw2" || time.Duration(p.NakReactionDelay) != 20*time.Microsecond || p.CNPScope != CNPPerPort ||
		time.Duration(p.NakGenDelay) != 1100*time.Nanosecond || len(p.Adaptive) != 3 {
		t.Errorf("loaded %+v", p)
	}
	for name, body := range map[string]string{
		"typo.yaml":  "nak-reaction-dealy: 1us\n",
		"scope.yaml": "cnp-scope: per-host\n",
		"base.yaml":  "base: cx9\n",
		"rate.yaml":  "line-rate-gbps: 0\n",
		"dur.yaml":   "nak-generation-delay: soon\n",
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := LoadPersonality(path); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
	if _, err := LoadPersonality("cx7"); err == nil || !strings.Contains(err.Error(), "cx4, cx5, cx6, spec") {
		t.Errorf("unknown builtin: %v", err)
	}
}

// TestAlphaUpdatePeriod: α is updated every dce_tcp_rtt = 1 µs (the
// ConnectX default), not every 55 µs (the DCQCN paper's K). A first CNP at
// 0 sets α = 1023 and cuts 100 Gb/s by α/2; the period [0, 1 µs) saw the
// CNP, the next ten did not, so a second CNP at 11 µs cuts by α/2 with
// α = (1023·g + 1024 − 1019)·g^10, g = 1019/1024. With a 55 µs period α
// would still be 1023 and the second cut would halve the rate again.
func TestAlphaUpdatePeriod(t *testing.T) {
	r := reactionPoint{lineMbps: 100_000}
	r.onCNP(0)
	r.advance(11_000)
	r.onCNP(11_000)
	g := 1019.0 / 1024
	alpha := 1023*g + 5
	for range 10 {
		alpha *= g
	}
	rc1 := 100_000 - 100_000*1023.0/1024/2
	want := rc1 - rc1*alpha/1024/2
	if r.alpha != alpha || r.rc != want {
		t.Errorf("after CNPs at 0 and 11 µs: α = %v, rate = %v Mb/s; want %v, %v", r.alpha, r.rc, alpha, want)
	}
}
