// Command kube-scheduler wraps the upstream kube-scheduler so that the test bed can build it
// from the Go module proxy (go install does not work with k8s.io/kubernetes's
// replace directives).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
