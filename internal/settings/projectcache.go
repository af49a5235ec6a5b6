package settings

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// projectCache holds the projects of the management namespace's Secrets,
// decoded, as a watch of those Secrets delivers them: a worker asks for
// the app's project in every pass (and at every create), and a read from
// memory costs neither a GET of the Secret nor its decoding. It holds
// nothing of the other Secrets there (credentials, accounts, keys).
type projectCache struct {
	mu       sync.RWMutex
	projects map[string]appspec.Project // by project name
	// undecodable names the projects whose Secret does not decode: Project
	// reads those itself and reports the error (the default project's
	// too, rather than the built-in one).
	undecodable map[string]bool
	synced      func() bool
	// objects lists what the informer holds (for tests).
	objects func() []any
}

// get returns a cached project. A project it does not hold (not listed
// yet, created a moment ago, or none) is for the caller to read, but for
// the built-in default project once the first list is in: a default
// without a Secret of its own is the built-in one.
func (c *projectCache) get(name string) (appspec.Project, bool) {
	if !c.synced() {
		return appspec.Project{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.projects[name]
	if !ok && name == appspec.DefaultProject && !c.undecodable[name] {
		return appspec.DefaultProjectSpec(), true
	}
	return p, ok
}

func (c *projectCache) put(s *corev1.Secret, log *slog.Logger) {
	name, ok := strings.CutPrefix(s.Name, prefixProject)
	if !ok {
		return
	}
	var p appspec.Project
	err := json.Unmarshal(s.Data["spec"], &p)
	if err != nil {
		log.Warn(msgProjectUndecodable, "project", name, "error", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.projects, name)
		c.undecodable[name] = true
		return
	}
	c.projects[name] = p
	delete(c.undecodable, name)
}

func (c *projectCache) drop(s *corev1.Secret) {
	name, ok := strings.CutPrefix(s.Name, prefixProject)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.projects, name)
	delete(c.undecodable, name)
}

const (
	msgProjectUndecodable = "project secret cannot be decoded; reading it on each use"
	msgProjectWatch       = "cannot watch the project secrets; reading them on each use"
)

// WatchProjects makes Project answer from memory: it watches secrets, the
// Secrets of the store's namespace (secretstore.Kubernetes.Secrets; the
// labelled ones), until ctx ends, and keeps the projects among them
// decoded. A project the watch has not delivered (before the first list,
// or created a moment ago) is read from the store as before. Project edits
// reach it as fast as the watch delivers them (milliseconds); while the
// API server cannot be reached, it answers with the last it saw.
func (s *Store) WatchProjects(ctx context.Context, secrets typedcorev1.SecretInterface, log *slog.Logger) {
	selector := secretstore.LabelManagedBy + "=" + secretstore.ManagedBy
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return secrets.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(listFirst{lw}, &corev1.Secret{}, 0, cache.Indexers{})
	// Of the other Secrets the informer keeps the name only.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if sec, ok := obj.(*corev1.Secret); ok && !strings.HasPrefix(sec.Name, prefixProject) {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sec.Name, Namespace: sec.Namespace, ResourceVersion: sec.ResourceVersion}}, nil
		}
		return obj, nil
	})
	c := &projectCache{projects: map[string]appspec.Project{}, undecodable: map[string]bool{}, objects: inf.GetStore().List}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onSecret(obj, log) },
		UpdateFunc: func(_, obj any) { c.onSecret(obj, log) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if sec, ok := obj.(*corev1.Secret); ok {
				c.drop(sec)
			}
		},
	})
	if err != nil { // only for an informer already stopped
		log.Warn(msgProjectWatch, "error", err)
		return
	}
	// Synced once the handler, not just the informer, has taken the first
	// list: a default project stored as a Secret is then in the cache.
	c.synced = reg.HasSynced
	s.cache.Store(c)
	go inf.RunWithContext(ctx)
}

func (c *projectCache) onSecret(obj any, log *slog.Logger) {
	if sec, ok := obj.(*corev1.Secret); ok {
		c.put(sec, log)
	}
}

// listFirst makes the informer list, then watch: client-go first asks for
// a streaming list, which API servers before 1.34 refuse (one wasted
// request at every start).
type listFirst struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells client-go's reflector to list.
func (listFirst) IsWatchListSemanticsUnSupported() bool { return true }
