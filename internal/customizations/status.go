package customizations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Prefixes of the Redis keys of the workers' statuses and of the sets
// they use, by digest.
const (
	statusKeyPrefix = "windlass:customizations:v1:"
	setKeyPrefix    = "windlass:customizations-set:v1:"
)

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
	// Prefix and SetPrefix replace statusKeyPrefix and setKeyPrefix (tests).
	Prefix    string
	SetPrefix string
}

func (r RedisStatuses) setKey(digest string) string {
	if r.SetPrefix != "" {
		return r.SetPrefix + digest
	}
	return setKeyPrefix + digest
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

// Publish publishes worker's status, and the set it uses (nil: none) under
// the set's digest, both for ttl. Workers with the same set share its key.
func (r RedisStatuses) Publish(ctx context.Context, worker string, st Status, set *Set, ttl time.Duration) error {
	if set != nil {
		if err := r.putSet(ctx, set, ttl); err != nil {
			return err
		}
	}
	return r.Put(ctx, worker, st, ttl)
}

// putSet stores set's Bundle under its digest, once; later calls only
// extend its ttl.
func (r RedisStatuses) putSet(ctx context.Context, set *Set, ttl time.Duration) error {
	key := r.setKey(set.Digest)
	n, err := r.Client.Expire(ctx, key, ttl).Result()
	if err != nil {
		return fmt.Errorf("publish the customizations set: %w", err)
	}
	if n {
		return nil
	}
	b, err := json.Marshal(set.Bundle())
	if err != nil {
		return err
	}
	if err := r.Client.Set(ctx, key, b, ttl).Err(); err != nil {
		return fmt.Errorf("publish the customizations set: %w", err)
	}
	return nil
}

// ErrSetGone says a published set is no longer in Redis.
var ErrSetGone = errors.New("the customizations set is no longer published")

// GetSet reads and rebuilds the set published under digest.
func (r RedisStatuses) GetSet(ctx context.Context, digest string) (*Set, error) {
	b, err := r.Client.Get(ctx, r.setKey(digest)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("set %s: %w", digest, ErrSetGone)
	}
	if err != nil {
		return nil, fmt.Errorf("read the customizations set %s: %w", digest, err)
	}
	var bundle Bundle
	if err := json.Unmarshal(b, &bundle); err != nil {
		return nil, fmt.Errorf("decode the customizations set %s: %w", digest, err)
	}
	set, err := FromBundle(bundle)
	if err != nil {
		return nil, fmt.Errorf("customizations set %s: %w", digest, err)
	}
	return set, nil
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
