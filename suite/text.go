package suite

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// nicStr is "requester cx5, responder cx5" or "cx5" when both agree.
func nicStr(m map[string]Identity) string {
	if len(m) == 0 {
		return "unknown"
	}
	rq, rs := m["requester"].String(), m["responder"].String()
	if rq == rs {
		return rq
	}
	return "requester " + rq + ", responder " + rs
}

// methodStr describes the decision rule.
func (o Options) methodStr() string {
	m := "Mann-Whitney U (two-sided)"
	if o.Method == MethodBootstrap {
		m = fmt.Sprintf("bootstrap CI of the median shift (%d resamples)", o.Resamples)
	}
	holm := "each quantity tested separately"
	if o.Holm {
		holm = "Holm–Bonferroni across each test's quantities"
	}
	return fmt.Sprintf("%s, alpha %g, %s; flagged when also |median shift| >= %g%% of BASE and >= %s / %s / %s",
		m, o.Alpha, holm, o.MinRelShift*100, FormatValue(o.MinAbsNs, UnitNs), FormatValue(o.MinAbsGbps, UnitGbps), FormatValue(o.MinAbsCount, UnitCount))
}

// WriteText writes the human-readable diff: per test the findings, then a
// table of every compared quantity, then a one-line total.
func (d *Diff) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "lumina diff: BASE %s → NEW %s\n", d.Base, d.New)
	fmt.Fprintf(&b, "method: %s\n", d.Options.methodStr())
	for _, t := range d.Tests {
		name := t.Name
		if t.NewName != "" {
			name += " → " + t.NewName
		}
		fmt.Fprintf(&b, "\ntest %s: ", name)
		switch {
		case t.BaseValid == "":
			fmt.Fprintf(&b, "only in NEW (%s)\n", nicStr(t.NewNIC))
		case t.NewValid == "":
			fmt.Fprintf(&b, "only in BASE (%s)\n", nicStr(t.BaseNIC))
		default:
			fmt.Fprintf(&b, "%s valid → %s valid; NIC %s → %s\n", t.BaseValid, t.NewValid, nicStr(t.BaseNIC), nicStr(t.NewNIC))
		}
		if len(t.Findings) == 0 {
			b.WriteString("  no change\n")
		}
		for _, f := range t.Findings {
			fmt.Fprintf(&b, "  %-11s %s %s: %s → %s", strings.ToUpper(string(f.Class)), f.Kind, f.Subject, f.Base, f.New)
			if f.Detail != "" {
				fmt.Fprintf(&b, "; %s", f.Detail)
			}
			b.WriteString("\n")
		}
		if len(t.Quantities) > 0 {
			tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  quantity\tn\tmedian BASE → NEW\tshift\tCI of shift\tp\tstatus")
			for _, q := range t.Quantities {
				rel := ""
				if q.RelShift != nil {
					rel = fmt.Sprintf(" (%+.1f%%)", *q.RelShift*100)
				}
				bm, nm := "-", "-"
				if q.BaseN > 0 {
					bm = FormatValue(q.BaseMedian, q.Unit)
				}
				if q.NewN > 0 {
					nm = FormatValue(q.NewMedian, q.Unit)
				}
				shift, ci, p := "", "", ""
				if q.BaseN > 0 && q.NewN > 0 {
					shift = FormatShift(q.Shift, q.Unit) + rel
					ci = fmt.Sprintf("[%s, %s]", FormatShift(q.CILo, q.Unit), FormatShift(q.CIHi, q.Unit))
					p = formatP(q.PAdj)
				}
				fmt.Fprintf(tw, "  %s\t%d/%d\t%s → %s\t%s\t%s\t%s\t%s\n", q.Name, q.BaseN, q.NewN, bm, nm, shift, ci, p, q.Status)
			}
			tw.Flush()
		}
	}
	verdict := "no regression"
	if d.Regressed() {
		verdict = "REGRESSION"
	}
	fmt.Fprintf(&b, "\n%s: %s\n", verdict, d.totals())
	_, err := io.WriteString(w, b.String())
	return err
}

// Text returns WriteText's output.
func (d *Diff) Text() string {
	var b strings.Builder
	d.WriteText(&b)
	return b.String()
}

// totals is "2 regressions, 1 change, 0 improvements in 4 tests".
func (d *Diff) totals() string {
	n := func(v int, what string) string {
		if v == 1 {
			return fmt.Sprintf("%d %s", v, what)
		}
		return fmt.Sprintf("%d %ss", v, what)
	}
	return fmt.Sprintf("%s, %s, %s in %s", n(d.Regressions, "regression"), n(d.Changes, "change"), n(d.Improvements, "improvement"), n(len(d.Tests), "test"))
}
