package model

import "github.com/netlumina/lumina/generator"

// Verdict is the outcome of a check: "pass", "fail" or "skip". The zero
// value is invalid; checks always set one.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	Skip Verdict = "skip"
)

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
