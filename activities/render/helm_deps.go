package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// helmMaxDepth bounds how deep dependencies of dependencies are resolved.
const helmMaxDepth = 8

// loadLocalChart loads the chart directory dir of the checkout root, then
// fills in the dependencies its charts/ directory lacks. Nothing is written
// into the checkout: fetched dependencies are added in memory.
func (r *Renderer) loadLocalChart(ctx context.Context, root, dir string) (*chart.Chart, error) {
	repo, err := openRepoRoot(root, r.maxFile)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	ch, err := loadChartDir(repo, dir)
	if err != nil {
		return nil, err
	}
	if err := r.resolveDependencies(ctx, ch, repo, dir, 0); err != nil {
		return nil, err
	}
	return ch, nil
}

// loadChartDir loads a chart directory after checking its files through
// the repoRoot (Helm's loader reads them itself, following symlinks) and
// that its values.yaml is no YAML bomb.
func loadChartDir(repo *repoRoot, dir string) (*chart.Chart, error) {
	if err := helmCheckFiles(repo, dir, nil); err != nil {
		return nil, err
	}
	rel, err := repo.rel(dir)
	if err != nil {
		return nil, err
	}
	if b, err := repo.readFile(path.Join(rel, "values.yaml")); err == nil {
		if err := helmCheckExpansion(b); err != nil {
			return nil, fmt.Errorf("%w: %s/values.yaml: %w", ErrChart, rel, err)
		}
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: load chart %s: %w", ErrChart, rel, err)
	}
	return ch, nil
}

// helmCheckFiles refuses files below dir that the repoRoot would not read
// (a symlink out of the checkout, a dangling one, a device, a FIFO, a file
// over the limit), and symlinks that loop back to a directory being walked
// (Helm's loader would recurse forever). onPath holds the real directories
// being walked.
func helmCheckFiles(repo *repoRoot, dir string, onPath map[string]bool) error {
	if onPath == nil {
		onPath = map[string]bool{}
	}
	onPath[dir] = true
	defer delete(onPath, dir)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := repo.rel(p)
		if err != nil {
			return err
		}
		st, err := repo.stat(rel)
		switch {
		case err != nil:
			return err
		case !st.IsDir():
			return repo.checkFile(rel, st)
		}
		real, err := filepath.EvalSymlinks(p) // a link to a directory inside the checkout
		if err != nil {
			return fmt.Errorf("%w: symlink %s: %w", ErrBadPath, rel, err)
		}
		for a := range onPath {
			if within(a, real) {
				return fmt.Errorf("%w: symlink %s makes a loop", ErrBadPath, rel)
			}
		}
		return helmCheckFiles(repo, real, onPath)
	})
}

// resolveDependencies adds to ch the dependencies of its Chart.yaml that
// its charts/ directory lacks, as `helm dependency build` would fetch them:
// versions from Chart.lock when it has them, file:// charts from the same
// checkout (dir is ch's directory there; empty for a downloaded chart),
// others from their HTTP or OCI repository through the chart cache.
func (r *Renderer) resolveDependencies(ctx context.Context, ch *chart.Chart, repo *repoRoot, dir string, depth int) error {
	if ch.Metadata == nil || len(ch.Metadata.Dependencies) == 0 {
		return nil
	}
	if depth > helmMaxDepth {
		return fmt.Errorf("%w: dependencies nest deeper than %d", ErrChart, helmMaxDepth)
	}
	present := map[string]bool{}
	for _, d := range ch.Dependencies() {
		present[d.Name()] = true
	}
	locked := map[string]*chart.Dependency{}
	if ch.Lock != nil {
		for _, d := range ch.Lock.Dependencies {
			if d != nil {
				locked[d.Name] = d
			}
		}
	}
	fetched := map[string]bool{}
	for _, dep := range ch.Metadata.Dependencies {
		if dep == nil || present[dep.Name] {
			continue
		}
		key := dep.Name + "\x00" + dep.Repository + "\x00" + dep.Version
		if fetched[key] {
			continue
		}
		fetched[key] = true
		sub, subDir, err := r.fetchDependency(ctx, dep, locked[dep.Name], repo, dir)
		if err != nil {
			return fmt.Errorf("chart %s: dependency %s: %w", ch.Name(), dep.Name, err)
		}
		if err := r.resolveDependencies(ctx, sub, repo, subDir, depth+1); err != nil {
			return err
		}
		ch.AddDependency(sub)
	}
	return nil
}

// fetchDependency loads one missing dependency and returns it with its
// directory in the checkout (empty unless it came from file://).
func (r *Renderer) fetchDependency(ctx context.Context, dep, lock *chart.Dependency, checkout *repoRoot, dir string) (*chart.Chart, string, error) {
	repo := dep.Repository
	switch {
	case repo == "":
		return nil, "", fmt.Errorf("%w: found in Chart.yaml, but missing in charts/ and it names no repository", ErrChart)
	case strings.HasPrefix(repo, "file://"):
		if dir == "" {
			return nil, "", fmt.Errorf("%w: %s: a downloaded chart cannot use file:// dependencies", ErrChart, repo)
		}
		return loadFileDependency(dep, checkout, dir)
	case strings.HasPrefix(repo, "@") || strings.HasPrefix(repo, "alias:"):
		return nil, "", fmt.Errorf("%w: %s: named repositories are not supported, use the repository URL", ErrChart, repo)
	case !isHelmRepoURL(repo):
		return nil, "", fmt.Errorf("%w: %s: unsupported repository", ErrChart, repo)
	}
	version := dep.Version
	if lock != nil && lock.Repository == repo && lock.Version != "" {
		version = lock.Version
	}
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v")); err != nil {
		resolved, err := r.ResolveChartVersion(ctx, repo, dep.Name, version)
		if err != nil {
			return nil, "", err
		}
		version = resolved
	}
	sub, err := r.loadRepoChartRaw(ctx, repo, dep.Name, version)
	if err != nil {
		return nil, "", err
	}
	return sub, "", nil
}

// loadFileDependency loads a file:// dependency, which must stay inside
// the checkout.
func loadFileDependency(dep *chart.Dependency, repo *repoRoot, dir string) (*chart.Chart, string, error) {
	p := strings.TrimPrefix(dep.Repository, "file://")
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(dir, filepath.FromSlash(p))
	}
	rel, err := repo.rel(full)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s leaves the repository", ErrBadPath, dep.Repository)
	}
	if _, err := repo.stat(rel); errors.Is(err, ErrPathNotFound) {
		return nil, "", fmt.Errorf("%w: %s", ErrPathNotFound, dep.Repository)
	} else if err != nil {
		return nil, "", fmt.Errorf("%s: %w", dep.Repository, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(repo.dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrBadPath, dep.Repository, err)
	}
	sub, err := loadChartDir(repo, real)
	if err != nil {
		return nil, "", err
	}
	if dep.Version != "" {
		c, err := semver.NewConstraint(dep.Version)
		if err != nil {
			return nil, "", fmt.Errorf("%w: version %q: %w", ErrChart, dep.Version, err)
		}
		v, err := semver.NewVersion(sub.Metadata.Version)
		if err != nil || !c.Check(v) {
			return nil, "", fmt.Errorf("%w: %s has version %s, which does not match %q", ErrChart, dep.Repository, sub.Metadata.Version, dep.Version)
		}
	}
	return sub, real, nil
}
