package report

import (
	"fmt"
	"github.com/netlumina/lumina/roce"
	"slices"
	"strings"
	"time"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/analyzers/pfc"
	"github.com/netlumina/lumina/analyzers/rnr"
)

// maxTextLines bounds each list in the text summary.
const maxTextLines = 10

// capped calls each for the first maxTextLines of n list items and, when
// there are more, writes more with how many were left out (more "" writes
// nothing).
func capped(w func(string, ...any), n int, more string, each func(i int)) {
	for i := range min(n, maxTextLines) {
		each(i)
	}
	if n > maxTextLines && more != "" {
		w(more, n-maxTextLines)
	}
}

func dur(ns int64) string { return time.Duration(ns).String() }

func durp(ns *int64) string {
	if ns == nil {
		return "-"
	}
	return dur(*ns)
}

// ConnString describes a connection on one line (naming its flow, if it
// has one).
func ConnString(c model.Connection) string {
	s := fmt.Sprintf("#%d %s %s qpn %#x ipsn %d -> %s qpn %#x", c.ID, c.Verb,
		model.IPString(c.Requester.IP), c.Requester.QPN, c.Requester.IPSN, model.IPString(c.Responder.IP), c.Responder.QPN)
	if c.Flow != "" {
		s += " flow " + c.Flow
	}
	return s
}

// Text returns the text report (report.txt, and the CLI's text output):
// every check with its verdict, reason and numbers, ending with the
// result line (see TextRun).
func Text(r *Report) string { return TextRun(r, nil) }

// TextRun is Text for a lumina run: lumina run's report.txt and lumina
// analyze's output are the same report. A non-nil run heads it with the
// test, repeat, testbed, seed, the NICs and run.Notes. The last line is
// the result: "result: PASS", "result: FAIL (events_applied, timeout)"
// naming the failed checks, "result: INCONCLUSIVE (...)" or "result:
// INVALID (...)" naming the failed validity checks (integrity,
// switch_state) or the run's error.
func TextRun(r *Report, run *RunInfo) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if run != nil {
		w("lumina run: %s repeat %d (testbed %s, seed %d)\n", run.Test, run.Repeat, run.Testbed, run.Seed)
		for _, n := range run.NICs {
			w("nic %s\n", n)
		}
		if run.Error != "" {
			w("error: %s\n", run.Error)
		}
		for _, n := range run.Notes {
			w("%s\n", n)
		}
	}
	for _, n := range r.Inputs {
		w("input: %s\n", n)
	}
	name := r.Trace.Path
	if name == "" {
		name = "(trace)"
	}
	if !r.Valid && r.Trace.Packets > 0 && r.Trace.RoCEPackets == 0 { // lumina run's invalid trace: not analyzed
		w("trace: %s: %d packets, not analyzed\n", name, r.Trace.Packets)
	} else {
		w("trace: %s: %d packets, %d RoCE, %s\n", name, r.Trace.Packets, r.Trace.RoCEPackets,
			map[bool]string{true: "mirror metadata", false: "no mirror metadata (pcap timestamps)"}[r.Trace.Mirrored])
	}
	integ := r.IntegrityVerdict()
	w("integrity: %s", integ.Verdict)
	if integ.Reason != "" {
		w(" (%s)", integ.Reason)
	}
	w("\n")
	w("connections: %d\n", len(r.Connections))
	capped(w, len(r.Connections), "  ... %d more\n", func(i int) {
		c := r.Connections[i]
		w("  %s\n", ConnString(c))
	})
	c := &r.Checks
	w("checks:\n")
	line := func(name string, v model.Verdict, summary, reason string) {
		if reason == NotSelected {
			summary = ""
		}
		w("  %-15s %-4s  %s", name, v, summary)
		if reason != "" && reason != summary {
			w(" (%s)", reason)
		}
		w("\n")
	}
	// The run's own checks: a skipped one was not evaluated (or not
	// recorded), its numbers are none.
	runLine := func(name string, v model.Verdict, summary, reason string) {
		if v == model.Skip {
			summary = ""
		}
		line(name, v, summary, reason)
	}
	if ss := c.SwitchState; ss != nil {
		runLine(CheckSwitchState, ss.Verdict, fmt.Sprintf("%d unexpected event copies, %d table differences, primary lost %d times",
			ss.UnexpectedCopies, len(ss.TableDiff), len(ss.LostPrimary)), ss.Reason)
	}
	if ea := c.EventsApplied; ea != nil {
		runLine(CheckEventsApplied, ea.Verdict, fmt.Sprintf("%d of %d events applied", ea.Applied, ea.Total), ea.Reason)
	}
	if g := c.Generator; g != nil {
		verified := "verified"
		if !g.Verified {
			verified = "NOT verified"
		}
		runLine(CheckGenerator, g.Verdict, fmt.Sprintf("%d bytes in %s, %.3f Gb/s goodput, responder memory %s",
			g.Bytes, dur(g.DurationNs), g.GoodputGbps, verified), g.Reason)
	}
	line(CheckGBN, c.GBN.Verdict, fmt.Sprintf("%d violations", len(c.GBN.Violations)+c.GBN.Dropped), c.GBN.Reason)
	kinds := map[string]int{}
	for _, l := range c.Retransmission.Losses {
		kinds[l.Kind]++
	}
	line(CheckRetransmission, c.Retransmission.Verdict, fmt.Sprintf("%d losses (%d fast, %d timeout, %d rnr, %d not retransmitted)",
		len(c.Retransmission.Losses), kinds["fast"], kinds["timeout"], kinds["rnr"], kinds["none"]), c.Retransmission.Reason)
	line(CheckTimeout, c.Timeout.Verdict, fmt.Sprintf("%d timeout episodes", len(c.Timeout.Timeouts)), c.Timeout.Reason)
	cnpSummary := fmt.Sprintf("%d CNPs; consistent scopes: %s", c.CNP.Observed, orNone(c.CNP.ConsistentScopes))
	if len(c.CNP.PossibleScopes) > 0 {
		cnpSummary += "; possibly: " + strings.Join(c.CNP.PossibleScopes, ", ")
	}
	line(CheckCNP, c.CNP.Verdict, cnpSummary, c.CNP.Reason)
	line(CheckCounters, c.Counters.Verdict, fmt.Sprintf("%d mismatches", len(c.Counters.Mismatches)), c.Counters.Reason)
	if c.Events.Verdict != "" {
		n := map[roce.Event]int{}
		for _, e := range c.Events.Events {
			n[e.Type]++
		}
		line(CheckEvents, c.Events.Verdict, fmt.Sprintf("%d events (%d delay, %d reorder, %d duplicate)",
			len(c.Events.Events), n[roce.EventDelay], n[roce.EventReorder], n[roce.EventDuplicate]), c.Events.Reason)
	}
	if pf := &r.PFC; pf.Verdict != "" {
		storms := 0
		for _, e := range pf.Episodes {
			if e.Storm {
				storms++
			}
		}
		line(CheckPFC, pf.Verdict, fmt.Sprintf("%d PFC frames, %d episodes (%d storms), %d violations, %d watchdog firings",
			pf.Frames, len(pf.Episodes)+pf.EpisodesDropped, storms, len(pf.Violations), len(pf.Watchdogs)), pf.Reason)
	}
	if d := r.PFC.Deadlock; d != nil {
		line(CheckDeadlock, d.Verdict, deadlockSummary(d), d.Reason)
	}
	if fl := &r.Flows; fl.Verdict != "" {
		line(CheckFlows, fl.Verdict, flowsSummary(fl), fl.Reason)
	}
	if c.RNR.Verdict != "" {
		line(CheckRNR, c.RNR.Verdict, RNRSummary(&c.RNR), c.RNR.Reason)
	}
	if sp := c.Retransmission.Spurious; len(sp) > 0 {
		w("  %d spurious retransmissions\n", len(sp))
	}

	if ea := c.EventsApplied; ea != nil && len(ea.Missing) > 0 {
		w("events not applied:\n")
		capped(w, len(ea.Missing), "  ... %d more\n", func(i int) { w("  %s\n", ea.Missing[i]) })
	}
	if g := c.Generator; g != nil && len(g.Errors) > 0 {
		w("generator errors:\n")
		capped(w, len(g.Errors), "  ... %d more\n", func(i int) { w("  %s\n", g.Errors[i]) })
	}
	if n := len(c.GBN.Violations); n > 0 {
		w("gbn violations:\n")
		capped(w, len(c.GBN.Violations), "  ... %d more\n", func(i int) {
			v := c.GBN.Violations[i]
			w("  conn %d %s %s: psn %d (rel %d) index %d: %s\n", v.Conn, v.Side, v.Rule, v.PSN, v.RelPSN, v.Index, v.Detail)
		})
	}
	if n := len(c.Retransmission.Losses); n > 0 {
		w("losses:\n")
		capped(w, len(c.Retransmission.Losses), "  ... %d more\n", func(i int) {
			l := c.Retransmission.Losses[i]
			w("  conn %d rel %d iter %d %s %s: nack generation %s, reaction %s, retransmission %s\n",
				l.Conn, l.RelPSN, l.Iter, l.Event, l.Kind, durp(l.NACKGenerationNs), durp(l.NACKReactionNs), durp(l.RetransmissionNs))
		})
	}
	if n := len(c.Timeout.Timeouts); n > 0 {
		to := &c.Timeout
		w("timeouts (T_tr %s", dur(to.TransportTimeoutNs))
		if to.UpperNs > 0 {
			w(", bound %s .. %s", dur(to.LowerNs), dur(to.UpperNs))
		}
		if u := to.TimestampUncertaintyNs; u > 0 {
			w(", timestamp uncertainty ±%s", model.FormatMicros(u))
		}
		if l := to.TimerLatenessNs; l > 0 {
			w(", timer lateness %s allowed above", dur(l))
		}
		if to.RetryCnt > 0 {
			w(", retry_cnt %d", to.RetryCnt)
		}
		if to.UpperNs > 0 {
			w("; * outside the bound")
		}
		w("):\n")
		capped(w, len(c.Timeout.Timeouts), "  ... %d more\n", func(i int) {
			t := c.Timeout.Timeouts[i]
			iv := make([]string, len(t.IntervalsNs))
			for j, v := range t.IntervalsNs {
				iv[j] = dur(v)
				if slices.Contains(t.OutOfBoundIntervals, j) {
					iv[j] += "*"
				}
			}
			flag := ""
			if t.OutOfBound {
				flag += " OUT-OF-BOUND"
			}
			if t.Inconclusive {
				flag += " INCONCLUSIVE"
			}
			if t.RetryExceeded {
				flag += " RETRY-EXCEEDED"
			}
			what := fmt.Sprintf("%d retries", t.Retries)
			switch n := len(t.RestartIntervals); {
			case n == 1 && n == t.Retries:
				what = "1 READ restart (the requester's page fault, no timer)"
			case n > 0 && n == t.Retries:
				what = fmt.Sprintf("%d READ restarts (the requester's page faults, no timer)", n)
			case n == 1:
				what += " (1 a READ restart after the requester's page fault)"
			case n > 0:
				what += fmt.Sprintf(" (%d READ restarts after the requester's page faults)", n)
			}
			w("  conn %d rel %d: %s, %s: %s%s\n", t.Conn, t.RelPSN, what, t.Outcome, strings.Join(iv, " "), flag)
		})
	}
	if n := len(c.Events.Events); n > 0 {
		w("events:\n")
		capped(w, len(c.Events.Events), "  ... %d more\n", func(i int) {
			e := c.Events.Events[i]
			w("  conn %d %s %s psn %d (rel %d) #%d index %d:", e.Conn, e.Direction, e.Type, e.PSN, e.RelPSN, e.Occurrence, e.Index)
			if e.HoldNs != nil {
				w(" hold %s", dur(*e.HoldNs))
			}
			if e.Depth != nil {
				w(" depth %d", *e.Depth)
			}
			if e.Copies != nil {
				w(" copies %d", *e.Copies)
			}
			if e.Verdict != "" {
				w(" %s", e.Verdict)
			}
			if e.Detail != "" {
				w(" (%s)", e.Detail)
			}
			w("\n")
		})
	}
	if r.PFC.Verdict != "" {
		textPFC(w, &r.PFC)
	}
	if r.PFC.Fabric != nil || r.PFC.Deadlock != nil {
		textFabric(w, &r.PFC)
	}
	if r.Flows.Verdict != "" {
		textFlows(w, &r.Flows)
	}
	if c.RNR.Verdict != "" {
		textRNR(w, &c.RNR)
	}
	capped(w, len(c.Counters.Mismatches), "", func(i int) {
		m := c.Counters.Mismatches[i]
		w("  counter %s\n", m.Detail)
	})
	w("%s\n", resultLine(r, run))
	return b.String()
}

// ResultInvalid is the text report's result of an invalid run (Result
// says FAIL): its trace or the switch's state cannot be trusted, or the
// run did not complete.
const ResultInvalid = "INVALID"

// resultLine is the text report's last line (see TextRun).
func resultLine(r *Report, run *RunInfo) string {
	failed := r.Failed()
	if !r.Valid || (run != nil && run.Error != "") {
		var why []string
		for _, n := range failed {
			if n == CheckIntegrity || n == CheckSwitchState {
				why = append(why, n)
			}
		}
		if run != nil && run.Error != "" {
			why = append(why, "error: "+run.Error)
		}
		if len(why) == 0 {
			why = append(why, "integrity "+string(r.IntegrityVerdict().Verdict))
		}
		return "result: " + ResultInvalid + " (" + strings.Join(why, "; ") + ")"
	}
	switch res := r.Result(); res {
	case ResultFail:
		return "result: " + res + " (" + strings.Join(failed, ", ") + ")"
	case ResultInconclusive:
		return "result: " + res + " (valid, no check failed; inconclusive: " + strings.Join(r.Inconclusive(), ", ") + ")"
	default:
		return "result: " + res
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func hostPort(port uint16, host string) string {
	if host == "" {
		return fmt.Sprintf("port %d", port)
	}
	return fmt.Sprintf("port %d (%s)", port, host)
}

// textPFC writes the pfc section: per port and priority, violations,
// watchdogs, warnings and the causality trees.
func textPFC(w func(string, ...any), pf *pfc.Result) {
	w("pfc (link %g Gb/s, reaction bound %s + frame, span %s):\n", pf.LinkGbps, dur(pf.ReactionBoundNs), dur(pf.SpanNs))
	for _, p := range pf.Ports {
		w("  %s prio %d: from host %d frames (%d xoff, %d xon), %d episodes, paused %s (%.4f%%); to host %d frames (%d xoff, %d xon), %d episodes, paused %s (%.4f%%), max reaction %s\n",
			hostPort(p.Port, p.Host), p.Priority, p.Received.Frames, p.Received.XOFF, p.Received.XON, p.Received.Episodes,
			dur(p.Received.PausedNs), 100*p.Received.PauseRatio, p.Sent.Frames, p.Sent.XOFF, p.Sent.XON, p.Sent.Episodes,
			dur(p.Sent.PausedNs), 100*p.Sent.PauseRatio, durp(p.Sent.MaxReactionNs))
	}
	capped(w, len(pf.Violations), "  ... %d more violations\n", func(i int) {
		v := pf.Violations[i]
		w("  violation: %s prio %d: conn %d index %d sent %s after the pause (index %d), bound %s: %s\n",
			hostPort(v.Port, v.Host), v.Priority, v.Conn, v.Index, dur(v.AfterNs), v.PauseIndex, dur(v.BoundNs), v.Verdict)
	})
	for _, m := range pf.Malformed {
		w("  malformed: index %d: %s\n", m.Index, m.Detail)
	}
	for _, s := range pf.SlowReceivers {
		rate := "-"
		if s.RxGbps != nil {
			rate = fmt.Sprintf("%.2f Gb/s", *s.RxGbps)
		}
		w("  slow receiver: %s prio %d: %d episodes, paused %s, received at %s\n", hostPort(s.Port, s.Host), s.Priority, s.Episodes, dur(s.PausedNs), rate)
	}
	capped(w, len(pf.Watchdogs), "  ... %d more watchdog firings\n", func(i int) {
		x := pf.Watchdogs[i]
		w("  watchdog %s at %s: %s prio %d: %s\n", x.Kind, dur(x.AtNs), hostPort(x.Port, x.Host), x.Priority, x.Detail)
	})
	for _, s := range pf.Warnings {
		w("  warning: %s\n", s)
	}
	capped(w, len(pf.Causality), "  ... %d more causality chains\n", func(i int) {
		c := pf.Causality[i]
		w("  causality of episode %d:\n", c.Episode)
		for k, h := range c.Chain {
			ind := strings.Repeat("  ", k+2)
			w("%s%s episode %d, %s .. %s: %s\n", ind, h.Direction, h.Episode, dur(h.StartNs), dur(h.EndNs), h.Why)
			for _, f := range h.Flows {
				w("%s  flow conn %d %s: %d packets during", ind, f.Conn, f.Direction, f.During)
				if f.LastBeforeNs != nil {
					w(", last before %s", dur(*f.LastBeforeNs))
				}
				if f.FirstAfterNs != nil {
					w(", first after %s", dur(*f.FirstAfterNs))
				}
				w("\n")
			}
		}
		w("%sorigin: %s: %s\n", strings.Repeat("  ", len(c.Chain)+2), c.Origin.Kind, c.Origin.Detail)
	})
}

// RNRSummary is the rnr check's one-line summary: "2 RNR NAKs, 2 waits
// (3.456–3.46× the timer), 3 stalls (2 rnr, 1 silent-timeout)".
func RNRSummary(r *rnr.Result) string {
	s := fmt.Sprintf("%s, %s", plural(r.NAKs, "RNR NAK", "RNR NAKs"), plural(len(r.Waits), "wait", "waits"))
	if r.MaxRatio > 0 {
		s += fmt.Sprintf(" (%g–%g× the timer)", r.MinRatio, r.MaxRatio)
	}
	s += ", " + plural(len(r.Stalls), "stall", "stalls")
	if len(r.Stalls) > 0 {
		n := r.Classes()
		var parts []string
		for _, k := range []string{rnr.ClassRNR, rnr.ClassNAK, rnr.ClassImplied, rnr.ClassLoss, rnr.ClassSilentRestart, rnr.ClassSilentTimeout} {
			if n[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
			}
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// textRNR writes the rnr section: the RNR waits, the stalls and the
// counter relations.
func textRNR(w func(string, ...any), r *rnr.Result) {
	retry := fmt.Sprint(r.RNRRetry)
	if r.RNRRetry >= 7 {
		retry = "7 (infinite)"
	}
	if len(r.Waits) > 0 {
		w("rnr waits (rnr_retry %s", retry)
		if r.TimestampUncertaintyNs > 0 {
			w(", timestamp uncertainty ±%s", model.FormatMicros(r.TimestampUncertaintyNs))
		}
		w("):\n")
	}
	capped(w, len(r.Waits), "  ... %d more\n", func(i int) {
		x := r.Waits[i]
		w("  conn %d psn %d (rel %d) index %d: rnr timer=%d (%s), #%d in a row: ", x.Conn, x.PSN, x.RelPSN, x.Index, x.TimerCode, dur(x.TimerNs), x.InRow)
		if x.WaitNs == nil {
			w("no retry in the trace\n")
			return
		}
		w("retry index %d after %s (%g× the timer) %s", x.RetryIndex, dur(*x.WaitNs), x.Ratio, x.Verdict)
		if x.RetryExceeded {
			w(" RETRY-EXCEEDED")
		}
		w("\n")
	})
	if len(r.Stalls) > 0 {
		w("rnr stalls:\n")
		capped(w, len(r.Stalls), "  ... %d more\n", func(i int) {
			x := r.Stalls[i]
			w("  conn %d psn %d (rel %d) index %d: %s after %s (%s)", x.Conn, x.PSN, x.RelPSN, x.Index, x.Class, dur(x.StallNs), x.Trigger)
			if x.Detail != "" {
				w(": %s", x.Detail)
			}
			w("\n")
		})
	}
	for _, c := range r.Counters {
		ok := "ok"
		if !c.OK {
			ok = "MISMATCH"
		}
		w("  rnr counters %s: %s: trace %d, counters %d %s\n", c.NIC, c.Relation, c.Trace, c.NICValue, ok)
	}
	if r.CountersSkipped != "" {
		w("  rnr counters not compared: %s\n", r.CountersSkipped)
	}
}
