// Package report defines the analyzers' report (the stable JSON schema of
// `lumina analyze --format json` and report.json, documented in
// docs/analyze.md) and writes it as report.json, report.txt (a short human
// summary) and report.html (self-contained: inline SVG plots made with
// gonum.org/v1/plot, no scripts, no external resources).
//
// Verdicts are pass, fail, skip and inconclusive (a bound check whose
// margin was within the timestamp uncertainty). Only fail fails a report
// (Passed); Result is PASS, FAIL or INCONCLUSIVE (passed, with
// inconclusive checks), and the text and HTML forms show inconclusive
// checks with their reasons.
//
// Plots: a PSN-versus-time sequence diagram per connection marking drops,
// ECN marks, corruptions, NAKs, CNPs and retransmissions; the latency
// breakdown of each lost packet; the timeout intervals with the IB bound.
// SeqCollector gathers the diagram's points during the analysis pass with
// fixed memory: each class of point is decimated (every k-th point, k
// doubling when the buffer fills) and only the first MaxPlotConns
// connections are drawn, so the page stays small for any trace size.
package report
