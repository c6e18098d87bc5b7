package model

// Verdict is the outcome of a check: "pass", "fail" or "skip". The zero
// value is invalid; checks always set one.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	Skip Verdict = "skip"
)

// Verb is the kind of traffic a connection carries.
type Verb string

// Verbs. Mixed is a QP that issues READs and SENDs/WRITEs: the Go-back-N
// check does not model it.
const (
	VerbWrite Verb = "write"
	VerbSend  Verb = "send"
	VerbRead  Verb = "read"
	VerbMixed Verb = "mixed"
)

// IsRead reports whether the data of the connection flows as READ
// responses (from the responder to the requester).
func (v Verb) IsRead() bool { return v == VerbRead }
