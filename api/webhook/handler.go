package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Path is where the API mounts Handle, for POST.
const Path = "/api/webhook"

// DefaultMaxBytes caps a payload when Config.MaxBytes is not set.
const DefaultMaxBytes = 1 << 20

// refreshTimeout bounds the refresh fan-out of one delivery.
const refreshTimeout = 30 * time.Second

// Log messages.
const (
	msgRejected      = "webhook rejected"
	msgIgnored       = "webhook event ignored"
	msgFailed        = "webhook failed"
	msgRefreshFailed = "webhook refresh failed"
	msgHandled       = "webhook push handled"
	msgNoSecrets     = "no webhook secret configured; every webhook will be rejected"
)

// Config configures the handler.
type Config struct {
	Secrets Secrets
	// MaxBytes caps the request body; zero or less means DefaultMaxBytes.
	MaxBytes int64
}

// App is an application with at least one source on a pushed repository.
type App struct {
	// ID names the application to the Refresher, e.g. "app/default/guestbook".
	ID string
	// TargetRevisions holds the target revision of each of the app's sources
	// whose repository matches, "" for one that sets none.
	TargetRevisions []string
	// Paths, when set, are the repository paths whose changes refresh the
	// app (its manifest-generate-paths annotation): a push that lists its
	// files and changes none under them is ignored.
	Paths []string
}

// Finder finds the applications with a source on a repository.
type Finder interface {
	// AppsForRepo returns the applications with a source whose repository
	// URL, normalised with appspec.NormalizeRepoURL, is normalizedRepoURL.
	AppsForRepo(ctx context.Context, normalizedRepoURL string) ([]App, error)
}

// Refresher asks an application to refresh.
type Refresher interface {
	Refresh(ctx context.Context, appID string, reason string) error
}

// Handler serves POST /api/webhook.
type Handler struct {
	cfg       Config
	finder    Finder
	refresher Refresher
	log       *slog.Logger
}

// NewHandler builds the webhook handler. A nil log means slog.Default(); a
// nil Finder or Refresher is a wiring bug and panics.
func NewHandler(cfg Config, f Finder, r Refresher, log *slog.Logger) *Handler {
	if f == nil || r == nil {
		panic("webhook: NewHandler needs a Finder and a Refresher")
	}
	if log == nil {
		log = slog.Default()
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Secrets == (Secrets{}) {
		log.Warn(msgNoSecrets)
	}
	return &Handler{cfg: cfg, finder: f, refresher: r, log: log}
}

// result is the response body.
type result struct {
	Refreshed []string `json:"refreshed"`
	Failed    []string `json:"failed,omitempty"`
	Ignored   string   `json:"ignored,omitempty"`
}

// Handle verifies a webhook delivery and refreshes the applications its
// pushes match; see the package documentation for the answers.
func (h *Handler) Handle(c *echo.Context) error {
	req := c.Request()
	provider, event := detect(req.Header)
	log := h.log.With("provider", provider, "event", event, "remote", c.RealIP())
	pushes, err := h.parse(req)
	var res result
	if err == nil {
		res, err = h.refreshAll(req.Context(), log, pushes)
	}
	switch status := echo.StatusCode(err); {
	case err == nil:
		return c.JSON(http.StatusOK, res)
	case errors.Is(err, ErrNotPush):
		log.Info(msgIgnored)
		return c.JSON(http.StatusAccepted, result{Refreshed: []string{}, Ignored: err.Error()})
	case status >= http.StatusInternalServerError:
		log.Error(msgFailed, "status", status, "error", err)
	default:
		log.Warn(msgRejected, "status", status, "error", err)
	}
	return err
}

// parse reads and verifies the delivery.
func (h *Handler) parse(req *http.Request) ([]Push, error) {
	body, err := h.readBody(req)
	if err != nil {
		return nil, err
	}
	return Parse(req, body, h.cfg.Secrets)
}

// readBody reads at most MaxBytes of the body; more is a 413.
func (h *Handler) readBody(req *http.Request) ([]byte, error) {
	limit := h.cfg.MaxBytes
	tooLarge := echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("payload exceeds %d bytes", limit))
	if req.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	var maxErr *http.MaxBytesError // a body limit set before this handler
	switch {
	case errors.As(err, &maxErr):
		return nil, tooLarge
	case err != nil:
		return nil, echo.NewHTTPError(http.StatusBadRequest, "reading the payload failed").Wrap(err)
	case int64(len(body)) > limit:
		return nil, tooLarge
	}
	return body, nil
}

// refreshAll refreshes every application a push matches, once each, and
// reports the outcome.
func (h *Handler) refreshAll(ctx context.Context, log *slog.Logger, pushes []Push) (result, error) {
	reasons, err := h.match(ctx, pushes)
	if err != nil {
		return result{}, err
	}
	// Refresh even if the sender hangs up: GitHub waits only 10 seconds.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshTimeout)
	defer cancel()
	res := result{Refreshed: []string{}}
	for _, id := range slices.Sorted(maps.Keys(reasons)) {
		if err := h.refresher.Refresh(ctx, id, reasons[id]); err != nil {
			log.Error(msgRefreshFailed, "app", id, "error", err)
			res.Failed = append(res.Failed, id)
			continue
		}
		res.Refreshed = append(res.Refreshed, id)
	}
	log.Info(msgHandled, "refs", len(pushes), "refreshed", len(res.Refreshed), "failed", len(res.Failed))
	return res, nil
}

// match returns the IDs of the applications the pushes match, each with the
// reason to refresh it. The Finder is asked once per normalised URL.
func (h *Handler) match(ctx context.Context, pushes []Push) (map[string]string, error) {
	found := map[string][]App{}
	reasons := map[string]string{}
	for _, p := range pushes {
		for _, repo := range normalizedURLs(p) {
			apps, ok := found[repo]
			if !ok {
				var err error
				if apps, err = h.finder.AppsForRepo(ctx, repo); err != nil {
					return nil, echo.NewHTTPError(http.StatusServiceUnavailable, "finding the applications of the repository failed").
						Wrap(fmt.Errorf("find apps for %s: %w", repo, err))
				}
				found[repo] = apps
			}
			for _, a := range apps {
				if _, done := reasons[a.ID]; !done && matchesAny(a.TargetRevisions, p) && touches(a.Paths, p) {
					reasons[a.ID] = reason(p)
				}
			}
		}
	}
	return reasons, nil
}

// normalizedURLs returns the distinct normalised forms of a push's URLs.
func normalizedURLs(p Push) []string {
	var out []string
	for _, u := range p.RepoURLs {
		if n := appspec.NormalizeRepoURL(u); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func matchesAny(targetRevisions []string, p Push) bool {
	return slices.ContainsFunc(targetRevisions, func(rev string) bool { return RevisionMatches(rev, p) })
}

// reason tells the application why it refreshes.
func reason(p Push) string {
	if p.After == "" {
		return fmt.Sprintf("%s webhook: %s deleted", p.Provider, p.Ref)
	}
	return fmt.Sprintf("%s webhook: push to %s at %s", p.Provider, p.Ref, p.After)
}
