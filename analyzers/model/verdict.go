package model

import "github.com/netlumina/lumina/generator"

// Verdict is the outcome of a check: "pass", "fail", "skip" or
// "inconclusive". The zero value is invalid; checks always set one.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	Skip Verdict = "skip"
	// Inconclusive: a bound check whose margin is within the timestamp
	// uncertainty (Params.TimestampUncertaintyNs) can decide neither pass
	// nor fail. It is not a failure: a run with an inconclusive check is
	// valid and passes, and `lumina diff` treats it as missing data.
	Inconclusive Verdict = "inconclusive"
)

// Failed reports whether v is Fail: the one verdict that fails a run
// (skip and inconclusive do not).
func (v Verdict) Failed() bool { return v == Fail }

// Verb is the verb of a connection: generator.Verb, lumina's one verb
// type (write, send, read, or mixed for an inferred QP that issues READs
// and SENDs/WRITEs).
type Verb = generator.Verb

// Verbs.
const (
	VerbWrite = generator.VerbWrite
	VerbSend  = generator.VerbSend
	VerbRead  = generator.VerbRead
	VerbMixed = generator.VerbMixed
)
