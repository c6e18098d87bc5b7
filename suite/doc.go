// Package suite summarizes the runs of a test suite and compares two
// suites statistically: lumina's firmware (driver, setting) regression
// testing. The user runs the same YAML tests on a NIC before (BASE) and
// after (NEW) a change and asks what changed in its micro-behaviour.
//
// # Concepts
//
// A suite is a results directory of `lumina run`: OUT/<test>/<repeat>/
// with a report.json each. Summarize reads them and writes OUT/suite.json
// (schema lumina.suite/v1, docs/regression.md): per test the repeats and
// their validity, each check's verdict counts (inconclusive counted apart,
// CheckSummary.Inconclusive), the Go-back-N violations by side/rule, the counter relations that held, the CNP pacing scopes
// consistent in every repeat, the NICs' identity (the personality in sim,
// driver and firmware on real hosts when report.json records them) and
// the distribution of every quantity in Quantities (NACK generation and
// reaction latency, retransmission latency, timeout intervals and retries,
// CNPs, message completion times, goodput), values included, so that a
// suite.json alone is enough to compare. `lumina run` calls SummarizeRuns
// when it is done.
//
// Compare matches the tests of two suites by name and reports Findings,
// each a Regression, an Improvement or a Change:
//   - a check's verdict (pass < mixed < fail) getting worse is a
//     regression, better an improvement; integrity changes are changes
//     (the capture's problem, not the NIC's);
//   - an inconclusive verdict (a bound check within the timestamp
//     uncertainty, docs/analyze.md) is missing data, like skip: the
//     repeats that decided make a check's verdict, and a check that
//     decided nowhere on one side is compared with nothing — a change at
//     most (a check inconclusive in BASE failing in NEW is a regression,
//     as a check that did not run and now fails), never a regression or
//     an improvement by itself; an inconclusive cnp check does not narrow
//     the consistent scopes;
//   - a Go-back-N violation rule appearing is a regression;
//   - a counter relation that held in every BASE repeat failing in NEW is
//     a regression;
//   - a change of the consistent CNP pacing scopes is a change;
//   - a quantity shift is flagged when it is statistically significant
//     (Options.Method: two-sided Mann-Whitney U, exact for small samples
//     and with ties, normal approximation with tie and continuity
//     corrections beyond; or the percentile bootstrap of the median
//     difference) at Options.Alpha AND large: |Δmedian| at least
//     MinRelShift of BASE's median and at least the unit's absolute
//     floor. Its direction (QuantitySpec.Better) makes it a regression or
//     an improvement; neutral quantities (timeouts, CNP counts) report a
//     change. A quantity measured on one side only appeared or
//     disappeared (a regression for timeouts).
//
// # Pitfalls
//
//   - Each quantity of each test is tested separately at Alpha, so a suite
//     of many quantities flags some false positive with probability well
//     above Alpha when nothing changed (five independent quantities: about
//     23% at 0.05) — unless the minimum effect size rules it out, which it
//     does for the simulator's jitter. Options.Holm bounds the family-wise
//     rate of each test's quantities by Alpha; nothing corrects across
//     tests.
//   - Per-event quantities pool every event of every valid repeat: events
//     of one repeat share a seed and are not independent draws; the test
//     treats them as such. Per-repeat quantities (goodput, CNPs) have as
//     many values as repeats: with 3 repeats a side no test can reach
//     p < 0.05 (status underpowered); use num-repeats >= 4.
//   - Quantities pool all positions and connections of a test: a test per
//     position compares positions separately.
//   - The bootstrap is conservative with ties and unreliable below 5
//     values a side (then it never decides).
//   - Invalid repeats (failed integrity) contribute nothing but their
//     integrity verdict.
package suite
