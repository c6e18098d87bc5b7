package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/netlumina/lumina/generator/softrnic"
)

// PersonalityPath returns the file that a host's nic.personality names in
// test t: the path relative to the test file's directory unless absolute,
// or "" for a builtin name (spec, cx4, cx5, cx6).
func PersonalityPath(t *Test, name string) string {
	low := strings.ToLower(name)
	if !strings.HasSuffix(low, ".yaml") && !strings.HasSuffix(low, ".yml") {
		return ""
	}
	if !filepath.IsAbs(name) && t.File != "" {
		return filepath.Join(filepath.Dir(t.File), name)
	}
	return name
}

// checkPersonalities reads and decodes every personality file the hosts
// name, as the run will (softrnic.DecodePersonality, which owns the
// format: docs/personality.md). A file that cannot be read is an error at
// the host's personality value in the test file (recorded in d), and so is
// an invalid one, whose errors are returned, positioned in that file (each
// file's sorted, once), with did-you-mean suggestions for unknown keys and
// names.
func (d *decoder) checkPersonalities(t *Test) ErrorList {
	var out ErrorList
	done := map[string]ErrorList{} // by file
	for i := range t.Hosts {
		hp := hostPath(t, i)
		vp := hp + ".nic.personality"
		path := PersonalityPath(t, t.Hosts[i].NIC.Personality)
		if path == "" || d.bad[vp] {
			continue
		}
		at := d.firstPos(vp, hp+".nic", hp)
		data, err := softrnic.ReadPersonalityFile(path)
		if err != nil {
			var pe *fs.PathError
			switch {
			case errors.Is(err, fs.ErrNotExist):
				d.errorAt(at, fmt.Sprintf("personality: personality file %s does not exist (a relative path is relative to the test file's directory)", path))
			case errors.As(err, &pe):
				d.errorAt(at, fmt.Sprintf("personality: cannot read personality file %s: %v", path, pe.Err))
			default:
				d.errorAt(at, fmt.Sprintf("personality: %v", err))
			}
			continue
		}
		errs, seen := done[path]
		if !seen {
			errs = personalityErrors(path, data).finish()
			done[path] = errs
			out = append(out, errs...)
		}
		if n := len(errs); n > 0 {
			d.errorAt(at, fmt.Sprintf("personality: personality file %s is invalid (%s below)", path, plural(n, "error")))
		}
	}
	return out
}

// personalityErrors returns the problems of personality file path, whose
// contents are data.
func personalityErrors(path string, data []byte) ErrorList {
	root, errs := parseDoc(path, data, "a personality file")
	if errs != nil {
		return errs
	}
	_, err := softrnic.DecodePersonality(path, root)
	if err == nil {
		return nil
	}
	var list softrnic.PersonalityErrors
	if !errors.As(err, &list) {
		return ErrorList{{File: path, Line: 1, Col: 1, Msg: err.Error()}}
	}
	var out ErrorList
	for _, e := range list {
		msg := e.Msg
		if e.Word != "" {
			if s := suggest(e.Word, e.Candidates); s != "" && s != e.Word {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
		}
		out = append(out, &Error{File: path, Line: e.Line, Col: e.Col, Msg: msg})
	}
	return out
}
