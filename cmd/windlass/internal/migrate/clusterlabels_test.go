package migrate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A cluster Secret's own labels become the cluster's labels, without
// Argo CD's secret-type label; a cluster registered with other labels is
// an update, with the same ones unchanged.
func TestClusterLabelsCarriedOver(t *testing.T) {
	s := secret("cluster-prod", typeCluster, map[string]string{"name": "prod", "server": "https://prod.example.com:6443"})
	s.Labels["env"] = "prod"
	c, refuse := clusterOf(s)
	if refuse != "" {
		t.Fatal(refuse)
	}
	if d := cmp.Diff(map[string]string{"env": "prod"}, c.Labels); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if c, _ := clusterOf(secret("cluster-dev", typeCluster, map[string]string{"name": "dev", "server": "https://dev.example.com"})); c.Labels != nil {
		t.Errorf("labels of a Secret with only its type: %v", c.Labels)
	}
	same := c.View()
	other := c.View()
	other.Labels = map[string]string{"env": "staging"}
	if !sameView(same, c.View()) || sameView(other, c.View()) {
		t.Error("sameView does not compare labels")
	}
}
