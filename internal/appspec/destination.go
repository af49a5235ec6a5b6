package appspec

import "fmt"

// validate refuses a destination that names its cluster twice, as Argo CD
// does, and a name no cluster could have.
func (d Destination) validate() error {
	switch {
	case d.Name == "":
		return nil
	case d.Server != "":
		return &FieldError{Field: "destination", Reason: fmt.Sprintf("sets both server (%s) and name (%s): name the cluster by one of them", d.Server, d.Name)}
	}
	return validName("destination.name", d.Name, 63)
}

// Resolved returns the destination with Server set to server, the URL its
// Name stands for now. The result is for the cluster steps; a spec keeps
// its name.
func (d Destination) Resolved(server string) Destination {
	if d.Name != "" && d.Server == "" {
		d.Server = server
	}
	return d
}

// Cluster is how the destination names its cluster: the server URL, or
// the registered name while it is not resolved.
func (d Destination) Cluster() string {
	if d.Server != "" {
		return d.Server
	}
	return d.Name
}

// destLabel names a destination's cluster in messages.
func destLabel(d Destination) string {
	switch {
	case d.Name == "":
		return d.Server
	case d.Server == "":
		return d.Name
	}
	return fmt.Sprintf("%s (%s)", d.Name, d.Server)
}
