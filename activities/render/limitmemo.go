package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// limitKeyPrefix names the keys of remembered limit breaks, next to the
// manifests in the same store.
const limitKeyPrefix = "windlass:renderlimit:v1:"

// limitMemoryTTL is how long a limit break is remembered: long enough that
// an app's refreshes (every few minutes) stop paying for it, short enough
// that a break the host caused (a loaded machine against the wall-time
// limit) does not stick for a day. Never longer than the manifest cache's
// TTL, so that manifests a later render of the request stored outlive it.
const limitMemoryTTL = time.Hour

// limitRecord is a remembered limit break.
type limitRecord struct {
	Error string    `json:"error"`
	At    time.Time `json:"at"`
}

const (
	msgLimitRemembered   = "render limit break remembered, not rendering"
	msgLimitRemembering  = "render broke a limit, remembering it"
	msgLimitRecordBroken = "remembered render limit break unreadable, rendering"
)

// limitKey names req's limit break under the sandbox's limits: a new
// commit, or a raised limit, is a new key.
func (r *Renderer) limitKey(req Request) string {
	return hashKey(limitKeyPrefix, struct {
		Key    string
		Limits SandboxLimits
	}{req.Key(), r.sandbox.limits})
}

// rememberedLimit returns the limit break remembered for req (an
// ErrRenderLimit whose message says when it happened), or nil. Only a
// sandbox breaks limits: without one it reads nothing. A store failure
// is logged and counted, and taken as nothing remembered.
func (r *Renderer) rememberedLimit(ctx context.Context, req Request) error {
	if r.sandbox == nil || r.stats.cacheDown() {
		return nil
	}
	key := r.limitKey(req)
	b, ok := r.storeGet(ctx, "get limit", key)
	if !ok {
		return nil
	}
	var rec limitRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Error == "" {
		r.stats.errors.Add(1)
		r.log.Warn(msgLimitRecordBroken, "key", key, "err", err)
		return nil
	}
	r.log.Info(msgLimitRemembered, "app", req.AppName, "key", key, "at", rec.At)
	msg := fmt.Sprintf("%s (remembered from the render at %s; a hard refresh renders again)", rec.Error, rec.At.UTC().Format(time.RFC3339))
	return sandboxError(msg, ErrRenderLimit.Type())
}

// rememberLimit remembers err for req when it is a limit break the render
// itself caused (rememberable), replacing what was remembered. A store
// failure is logged and counted, not returned.
func (r *Renderer) rememberLimit(ctx context.Context, req Request, err error) {
	if r.sandbox == nil || ctx.Err() != nil || !rememberable(err) || r.stats.cacheDown() {
		return
	}
	b, _ := json.Marshal(limitRecord{Error: err.Error(), At: time.Now().UTC()}) // a string and a time: no error
	key, ttl := r.limitKey(req), min(limitMemoryTTL, r.ttl)
	if r.storeSet(ctx, "set limit", key, b, ttl) {
		r.log.Info(msgLimitRemembering, "app", req.AppName, "key", key, "ttl", ttl)
	}
}

// rememberable reports whether err is a limit break to remember: not
// another error (a network failure, a missing credential or chart may be
// fixed without a new commit), nor a sandbox a signal from outside ended.
func rememberable(err error) bool {
	var killed *sandboxKilled
	return errors.Is(err, ErrRenderLimit) && !errors.As(err, &killed)
}
