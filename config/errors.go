package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInvalid is matched by errors.Is for every error that Parse and Load
// return because the test file is invalid (as opposed to unreadable).
var ErrInvalid = errors.New("invalid test file")

// maxErrors is how many errors an ErrorList holds at most; past it, one
// final "too many errors" entry is added.
const maxErrors = 50

// Pos is a position in a test file. Line and Col are 1-based; the zero Pos
// means "unknown" (for example, a value that was filled in by default).
type Pos struct {
	// Line is the 1-based line number.
	Line int
	// Col is the 1-based column number (in bytes, as yaml.v3 counts them).
	Col int
}

// String returns "LINE:COL".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error is one problem in a test file, with the position of the offending
// YAML node.
type Error struct {
	// File is the file name given to Parse or Load.
	File string
	// Line and Col locate the offending node (1-based).
	Line, Col int
	// Msg describes the problem, without the position.
	Msg string
}

// Error returns "FILE:LINE:COL: MSG".
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// ErrorList is every problem found in one test file, sorted by position.
// Parse and Load return it (as an error) when the file is invalid; use
// errors.As to get at the individual errors.
type ErrorList []*Error

// Error returns one error per line, joined by "\n" (no trailing newline).
func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (l ErrorList) Is(target error) bool { return target == ErrInvalid }

// finish sorts the list by position (stable, so errors at one node keep
// their order) and caps it at maxErrors.
func (l ErrorList) finish() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Col < l[j].Col
	})
	if len(l) > maxErrors {
		next := l[maxErrors]
		l = append(l[:maxErrors:maxErrors], &Error{File: next.File, Line: next.Line, Col: next.Col,
			Msg: fmt.Sprintf("too many errors (%d more not shown)", len(l)-maxErrors)})
	}
	return l
}

// suggest returns the candidate closest to s, or "" if none is close enough
// to be a plausible typo. Case and '_' versus '-' are ignored.
func suggest(s string, candidates []string) string {
	norm := func(x string) string { return strings.ReplaceAll(strings.ToLower(x), "_", "-") }
	ns := norm(s)
	limit := len(ns) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		d := editDistance(ns, norm(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes cost 1.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		// Long keys are never typos of ours; avoid quadratic work.
		if a == b {
			return 0
		}
		return 1 << 20
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
