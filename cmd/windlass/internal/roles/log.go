package roles

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"
)

// newLogger is a role's logger; the Redis client's own messages go to it.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	redis.SetLogger(redisLog{log})
	return log, nil
}

const msgRedisClient = "redis client"

// redisLog passes the Redis client's messages (a failed dial while Redis
// is down, say), which it would print unstructured, to slog.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, msgRedisClient, "detail", fmt.Sprintf(format, v...))
}
