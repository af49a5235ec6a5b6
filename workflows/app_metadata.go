package workflows

// This file holds what the app does with its labels and annotations: the
// labels search attribute, and the Argo CD annotations refresh and
// skip-reconcile.

import (
	"maps"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// changeApp020 versions this release's changes to an app run, under one
// change ID so that a run records one marker for them all: the labels
// search attribute, the refresh and skip-reconcile annotations, the wait
// for dependencies (app_depends.go) and notifications (app_notify.go).
// Runs that started before it keep the old path.
const changeApp020 = "app-0.2"

var saLabels = temporal.NewSearchAttributeKeyKeywordList(SearchAttrLabels)

// LabelEntries are the WindlassLabels values of labels: "key" and
// "key=value" for each label, sorted, so that a selector can ask for a
// key with a value or for the key alone.
func LabelEntries(labels map[string]string) []string {
	out := make([]string, 0, 2*len(labels))
	//workflowcheck:ignore (the keys are sorted)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k, k+"="+labels[k])
	}
	return out
}

// metadataOn says the run takes the changeApp020 path.
func (a *application) metadataOn() bool { return a.v020 >= 1 }

var saDependsOn = temporal.NewSearchAttributeKeyKeywordList(SearchAttrDependsOn)

// dependsOnKeys are the app's dependencies, "<project>/<name>".
func dependsOnKeys(spec appspec.Application) []string {
	out := make([]string, 0, len(spec.DependsOn))
	for _, d := range spec.Dependencies() {
		out = append(out, d.String())
	}
	return out
}

// dependsOnAttr is the upsert of the dependencies search attribute.
func dependsOnAttr(spec appspec.Application) temporal.SearchAttributeUpdate {
	if len(spec.DependsOn) == 0 {
		return saDependsOn.ValueUnset()
	}
	return saDependsOn.ValueSet(dependsOnKeys(spec))
}

// labelsAttr is the upsert of the labels search attribute.
func labelsAttr(labels map[string]string) temporal.SearchAttributeUpdate {
	if len(labels) == 0 {
		return saLabels.ValueUnset()
	}
	return saLabels.ValueSet(LabelEntries(labels))
}

// takeRefreshAnnotation takes the refresh the spec's annotation asks for
// and returns the spec without it, so that it fires once.
func (a *application) takeRefreshAnnotation(ctx workflow.Context, spec appspec.Application) appspec.Application {
	hard, ok := spec.RefreshAnnotation()
	if !a.metadataOn() || !ok {
		return spec
	}
	a.onRefresh(ctx, RefreshRequest{Hard: hard, Reason: "annotation " + appspec.AnnotationRefresh})
	a.refreshQueued = true
	workflow.GetLogger(ctx).Info(msgRefreshAnnotation, "hard", hard)
	return spec.WithoutRefreshAnnotation()
}

// skipReconcile says the skip-reconcile annotation pauses the app, and
// records a change of it in the status.
func (a *application) skipReconcile(ctx workflow.Context) bool {
	skip := a.metadataOn() && a.st.Spec.SkipReconcile()
	st := &a.st.Status
	if skip != st.ReconcileSkipped {
		st.ReconcileSkipped = skip
		if skip {
			a.event(ctx, EventNormal, "ReconcileSkipped", "reconciliation is paused by the "+appspec.AnnotationSkipReconcile+" annotation")
		} else {
			a.event(ctx, EventNormal, "ReconcileResumed", "the "+appspec.AnnotationSkipReconcile+" annotation is gone: reconciliation resumes")
		}
	}
	if skip {
		// Publish labels and the flag; a pass would have.
		a.passSpec = a.st.Spec
		a.unpublished = true
	}
	return skip
}

// skipError refuses an operation while the app is paused.
func (a *application) skipError() error {
	if a.metadataOn() && a.st.Spec.SkipReconcile() {
		return temporal.NewApplicationError("reconciliation is paused by the "+appspec.AnnotationSkipReconcile+
			" annotation: remove it to sync", ErrTypeReconcileSkipped, "annotations."+appspec.AnnotationSkipReconcile)
	}
	return nil
}

// takeRefreshQueued says a refresh annotation asked for a pass since the
// loop last looked.
func (a *application) takeRefreshQueued() bool {
	q := a.refreshQueued
	a.refreshQueued = false
	return q
}

const msgRefreshAnnotation = "refresh asked by annotation"

// labelsKey is the labels' part of the published search attributes.
func labelsKey(labels map[string]string) string { return strings.Join(LabelEntries(labels), "\n") }
