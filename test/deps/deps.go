// Package deps pins, by import, the libraries Windlass is built on, so that
// their versions resolve together in go.mod from day one.
package deps

import (
	_ "github.com/casbin/casbin/v2"
	_ "github.com/dexidp/dex/server"
	_ "github.com/dexidp/dex/storage/memory"
	_ "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/google/go-jsonnet"
	_ "github.com/itchyny/gojq"
	_ "github.com/labstack/echo/v5"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/temporalio/ui-server/v2/server"
	_ "github.com/yuin/gopher-lua"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/server/temporal"
	_ "helm.sh/helm/v4/pkg/action"
	_ "k8s.io/client-go/kubernetes"
	_ "sigs.k8s.io/kustomize/api/krusty"
)
