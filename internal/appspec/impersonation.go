package appspec

import (
	"fmt"
	"strings"
)

// DestinationServiceAccount is the service account a project's syncs
// impersonate on the destinations its globs match (Argo CD's sync
// impersonation). DefaultServiceAccount is "name", in the app's
// destination namespace, or "namespace:name".
type DestinationServiceAccount struct {
	Server                string `json:"server"`
	Namespace             string `json:"namespace"`
	DefaultServiceAccount string `json:"defaultServiceAccount"`
}

// ServiceAccountFor is the Kubernetes user a sync to d impersonates: that
// of the first entry whose server and namespace globs match, as
// system:serviceaccount:<namespace>:<name>. ok is false when none matches.
func (p Project) ServiceAccountFor(d Destination) (user string, ok bool) {
	for _, e := range p.DestinationServiceAccounts {
		server, serverDenied := matchOrDeny(orStar(e.Server), d.Server)
		ns, nsDenied := matchOrDeny(orStar(e.Namespace), d.Namespace)
		if !server || !ns || serverDenied || nsDenied {
			continue
		}
		saNS, name, qualified := strings.Cut(e.DefaultServiceAccount, ":")
		if !qualified {
			saNS, name = d.Namespace, e.DefaultServiceAccount
		}
		return "system:serviceaccount:" + saNS + ":" + name, true
	}
	return "", false
}

func (e DestinationServiceAccount) validate(field string) error {
	ns, name, qualified := strings.Cut(e.DefaultServiceAccount, ":")
	if !qualified {
		ns, name = "", e.DefaultServiceAccount
	}
	if name == "" {
		return &FieldError{Field: field + ".defaultServiceAccount", Reason: "is required"}
	}
	if !dnsSubdomain.MatchString(name) || len(name) > 253 || (qualified && !dnsLabel.MatchString(ns)) {
		return &FieldError{Field: field + ".defaultServiceAccount", Reason: fmt.Sprintf("%q is not a service account name or namespace:name", e.DefaultServiceAccount)}
	}
	return nil
}
