package render

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxErrorBytes bounds the message of a render error: a tool's error can
// repeat itself (a recursive Helm include gave 98 KB), and the message
// travels into workflow history and the app's status.
const maxErrorBytes = 4 << 10

// truncatedError keeps the chain (and so the error's type) of an error
// whose message was cut or rewritten.
type truncatedError struct {
	msg string
	err error
}

func (e *truncatedError) Error() string { return e.msg }
func (e *truncatedError) Unwrap() error { return e.err }

// capError keeps the start of an overlong message and says how much was
// cut.
func capError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if len(msg) <= maxErrorBytes {
		return err
	}
	cut := maxErrorBytes - 64 // room for the note
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return &truncatedError{msg: fmt.Sprintf("%s … [error truncated: %d of %d bytes shown]", msg[:cut], cut, len(msg)), err: err}
}

// hidePaths takes the worker's own directories (checkouts, the render
// cache) out of err's message: a path inside a checkout becomes relative
// to the repository, and the user reads no worker path.
func hidePaths(err error, dirs ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := msg
	for _, d := range dirs {
		if d == "" {
			continue
		}
		forms := []string{d}
		if real, rerr := filepath.EvalSymlinks(d); rerr == nil && real != d {
			forms = append(forms, real)
		}
		for _, f := range forms {
			f = strings.TrimSuffix(f, string(filepath.Separator))
			out = strings.ReplaceAll(out, f+string(filepath.Separator), "")
			out = strings.ReplaceAll(out, f, ".")
		}
	}
	if out == msg {
		return err
	}
	return &truncatedError{msg: out, err: err}
}
