package main

import (
	"reflect"
	"testing"
)

func TestAPIRequests(t *testing.T) {
	before := parseAPIRequests(`# HELP apiserver_request_total x
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_duration_seconds_bucket{verb="LIST",le="0.1"} 99
`)
	want := apiRequests{"LIST configmaps": 10, "APPLY configmaps dry-run": 4, "PATCH deployments/status": 2}
	if !reflect.DeepEqual(before, want) {
		t.Fatalf("parse = %v, want %v", before, want)
	}
	after := apiRequests{"LIST configmaps": 30, "APPLY configmaps dry-run": 4, "PATCH deployments/status": 12, "GET pods": 5}
	top, total := after.perApp(before, 5, 2)
	wantTop := []apiCount{{"LIST configmaps", 4}, {"PATCH deployments/status", 2}}
	if !reflect.DeepEqual(top, wantTop) || total != 7 {
		t.Errorf("perApp = %v, %v; want %v, 7", top, total, wantTop)
	}
}
