package kube

import (
	"time"

	"k8s.io/client-go/rest"
)

// ForUser returns clients for a destination server that act as user
// through Kubernetes impersonation (sync impersonation): the server
// checks user's permissions, with the factory's own credentials allowed
// to impersonate. They are rebuilt as often as the server's own.
func (f *Factory) ForUser(server, user string) (*Clients, error) {
	base, err := f.entry(server)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := [2]string{server, user}
	if e, ok := f.users[key]; ok && time.Since(e.at) < remoteTTL && !e.at.Before(base.at) {
		return e.clients, nil
	}
	cfg := rest.CopyConfig(base.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	e, err := newEntry(cfg)
	if err != nil {
		return nil, err
	}
	if f.users == nil {
		f.users = map[[2]string]*entry{}
	}
	f.users[key] = e
	return e.clients, nil
}
