package roles

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
)

// appSetEvaluator is what the API's ApplicationSet preview evaluates
// with: the registered clusters, Git through mirrors of its own (a
// temporary directory removed when ctx ends, with the registered
// repositories' credentials), and the secret store for tokens and plugin
// settings.
func appSetEvaluator(ctx context.Context, log *slog.Logger, store secretstore.Store, sets *settings.Store, a apiSettings) (*appset.Evaluator, error) {
	if a.AppSetMaxElements < 0 {
		return nil, fmt.Errorf("--appset-max-elements %d: want a positive number", a.AppSetMaxElements)
	}
	dir, err := os.MkdirTemp("", "windlass-appset-")
	if err != nil {
		return nil, fmt.Errorf("appset preview cache: %w", err)
	}
	go func() {
		<-ctx.Done()
		_ = os.RemoveAll(dir)
	}()
	git, err := source.New(dir, &source.RegisteredAuth{Repos: sets}, log)
	if err != nil {
		return nil, err
	}
	return appset.New(sets, source.Trees{Git: git}, store, appset.WithAllowedAPIs(a.scmURLs()...), appset.WithLimit(a.AppSetMaxElements)), nil
}

// scmURLs splits --appset-allowed-scm-urls.
func (a apiSettings) scmURLs() []string {
	var urls []string
	for u := range strings.SplitSeq(a.AppSetSCMURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return urls
}
