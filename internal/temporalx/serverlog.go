//go:build !nodevserver

package temporalx

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts slog to the server's log.Logger. It drops everything
// below warn (the server logs a great deal at info) and the warning about the
// HTTP API port we leave unset on purpose. Once stopping is set it also drops
// warnings and errors about cancelled contexts: a stopping server complains
// about every poll, dial and query it cuts short, and its system workers keep
// doing so for a moment after Stop.
type serverLogger struct {
	l        *slog.Logger
	stopping *atomic.Bool
}

var _ log.Logger = serverLogger{}

func (s serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	switch {
	case level < slog.LevelWarn,
		level < slog.LevelError && s.stopping.Load(),
		strings.HasPrefix(msg, "HTTP API port has not been set"),
		!s.l.Enabled(ctx, level):
		return
	}
	attrs := make([]slog.Attr, 0, len(tags))
	for _, t := range tags {
		v := t.Value()
		if str, ok := v.(string); ok && s.stopping.Load() && strings.Contains(str, context.Canceled.Error()) {
			return
		}
		attrs = append(attrs, slog.Any(t.Key(), v))
	}
	s.l.LogAttrs(ctx, level, msg, attrs...)
}

func (s serverLogger) Debug(msg string, tags ...tag.Tag) { s.emit(slog.LevelDebug, msg, tags) }
func (s serverLogger) Info(msg string, tags ...tag.Tag)  { s.emit(slog.LevelInfo, msg, tags) }
func (s serverLogger) Warn(msg string, tags ...tag.Tag)  { s.emit(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag) { s.emit(slog.LevelError, msg, tags) }

// DPanic logs at error: this is not a development build of the server.
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.emit(slog.LevelError, msg, tags) }

func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.emit(slog.LevelError, msg, tags)
	panic(msg)
}

func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.emit(slog.LevelError, msg, tags)
	os.Exit(1)
}
