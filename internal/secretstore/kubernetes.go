package secretstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/windlass-cd/windlass/internal/failure"
)

// ErrUnreachable is wrapped by the Kubernetes store's errors when the API
// server did not answer, or answered that it cannot serve now. It is
// transient: the activities that read credentials keep retrying it.
var ErrUnreachable = failure.Transient(failure.TypeUnreachable, "the Kubernetes API is unreachable")

// unreachable wraps err with ErrUnreachable unless the API server answered
// it with a status of its own (not found, forbidden, conflict...).
func unreachable(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && !apierrors.IsServiceUnavailable(err) && !apierrors.IsServerTimeout(err) &&
		!apierrors.IsTimeout(err) && !apierrors.IsTooManyRequests(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, err)
}

// Labels on every Secret the Kubernetes store writes.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "windlass"
)

// Kubernetes keeps each secret as a Secret of the same name in one
// namespace (the management namespace, created on the first Put when it
// is missing). Only Secrets labelled app.kubernetes.io/managed-by=windlass
// are listed.
type Kubernetes struct {
	c  kubernetes.Interface
	ns string
}

var _ Store = (*Kubernetes)(nil)

// NewKubernetes returns a store in namespace ns.
func NewKubernetes(c kubernetes.Interface, ns string) (*Kubernetes, error) {
	if c == nil || ns == "" {
		return nil, fmt.Errorf("secretstore: a client and a namespace are required")
	}
	return &Kubernetes{c: c, ns: ns}, nil
}

// Secrets is the client of the namespace's Secrets; the store's own carry
// the label LabelManagedBy=ManagedBy.
func (k *Kubernetes) Secrets() typedcorev1.SecretInterface { return k.c.CoreV1().Secrets(k.ns) }

// Get implements Store.
func (k *Kubernetes) Get(ctx context.Context, name string) (map[string][]byte, error) {
	s, err := k.c.CoreV1().Secrets(k.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s/%s: %w", k.ns, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %s/%s: %w", k.ns, name, unreachable(err))
	}
	return clone(s.Data), nil
}

// Put implements Store: it creates the Secret, or replaces its data.
func (k *Kubernetes) Put(ctx context.Context, name string, data map[string][]byte) error {
	secrets := k.c.CoreV1().Secrets(k.ns)
	for attempt := 0; ; attempt++ {
		cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.ns, Labels: map[string]string{LabelManagedBy: ManagedBy}},
				Type:       corev1.SecretTypeOpaque, Data: data,
			}
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.IsNotFound(err) && attempt == 0 {
				if err := k.ensureNamespace(ctx); err != nil {
					return err
				}
				continue
			}
		case err == nil:
			cur.Data = data
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			cur.Labels[LabelManagedBy] = ManagedBy
			_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("put secret %s/%s: %w", k.ns, name, unreachable(err))
		}
		return nil
	}
}

func (k *Kubernetes) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.ns}}
	if _, err := k.c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", k.ns, unreachable(err))
	}
	return nil
}

// Delete implements Store.
func (k *Kubernetes) Delete(ctx context.Context, name string) error {
	err := k.c.CoreV1().Secrets(k.ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("secret %s/%s: %w", k.ns, name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete secret %s/%s: %w", k.ns, name, unreachable(err))
	}
	return nil
}

// List implements Store.
func (k *Kubernetes) List(ctx context.Context, prefix string) ([]string, error) {
	list, err := k.c.CoreV1().Secrets(k.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list secrets in %s: %w", k.ns, unreachable(err))
	}
	var out []string
	for _, s := range list.Items {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}
