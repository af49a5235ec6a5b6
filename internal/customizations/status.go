package customizations

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// statusKeyPrefix starts the Redis keys of the workers' statuses.
const statusKeyPrefix = "windlass:customizations:v1:"

// WorkerStatus is the Status one worker published.
type WorkerStatus struct {
	Worker string `json:"worker"`
	Status
}

// RedisStatuses is where workers publish their Library's Status and the
// API reads them: one key per worker, which expires when the worker stops
// publishing.
type RedisStatuses struct {
	Client redis.UniversalClient
	// Prefix replaces statusKeyPrefix (tests).
	Prefix string
}

func (r RedisStatuses) prefix() string {
	if r.Prefix != "" {
		return r.Prefix
	}
	return statusKeyPrefix
}

// Put publishes worker's status for ttl.
func (r RedisStatuses) Put(ctx context.Context, worker string, st Status, ttl time.Duration) error {
	b, err := json.Marshal(WorkerStatus{Worker: worker, Status: st})
	if err != nil {
		return err
	}
	if err := r.Client.Set(ctx, r.prefix()+worker, b, ttl).Err(); err != nil {
		return fmt.Errorf("publish the customizations status: %w", err)
	}
	return nil
}

// maxStatuses bounds the statuses List reads.
const maxStatuses = 1000

// List returns the statuses the workers published, by worker.
func (r RedisStatuses) List(ctx context.Context) ([]WorkerStatus, error) {
	var keys []string
	iter := r.Client.Scan(ctx, 0, r.prefix()+"*", 100).Iterator()
	for iter.Next(ctx) && len(keys) < maxStatuses {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("list the customizations statuses: %w", err)
	}
	out := []WorkerStatus{}
	if len(keys) == 0 {
		return out, nil
	}
	vals, err := r.Client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read the customizations statuses: %w", err)
	}
	for _, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // expired between the scan and the read
		}
		var ws WorkerStatus
		if err := json.Unmarshal([]byte(s), &ws); err != nil {
			continue
		}
		out = append(out, ws)
	}
	slices.SortFunc(out, func(a, b WorkerStatus) int { return strings.Compare(a.Worker, b.Worker) })
	return out, nil
}
