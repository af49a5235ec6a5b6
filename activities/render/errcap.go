package render

import (
	"fmt"
	"unicode/utf8"
)

// maxErrorBytes bounds the message of a render error: a tool's error can
// repeat itself (a recursive Helm include gave 98 KB), and the message
// travels into workflow history and the app's status.
const maxErrorBytes = 4 << 10

// truncatedError keeps the chain (and so the error's type) of an error
// whose message was cut.
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
