//go:build !nodevserver

package temporalx

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/workflowservice/v1"
	persistencespb "go.temporal.io/server/api/persistence/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Modes of the files and directories the filestore archiver writes.
const (
	archiveFileMode = "0640"
	archiveDirMode  = "0750"
)

// archivalServerConfig turns on the cluster's archivers for the schemes a
// uses, with reads through the frontend; nil a leaves archival off.
func archivalServerConfig(conf *config.Config, a *ArchivalConfig) {
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	if a == nil {
		return
	}
	hp := &config.HistoryArchiverProvider{}
	vp := &config.VisibilityArchiverProvider{}
	schemes := a.schemes()
	if schemes[SchemeFile] {
		fs := &config.FilestoreArchiver{FileMode: archiveFileMode, DirMode: archiveDirMode}
		hp.Filestore, vp.Filestore = fs, fs
	}
	if schemes[SchemeS3] {
		s3 := &config.S3Archiver{Region: a.S3.Region, S3ForcePathStyle: a.S3.PathStyle}
		if a.S3.Endpoint != "" {
			s3.Endpoint = &a.S3.Endpoint
		}
		hp.S3store, vp.S3store = s3, s3
	}
	conf.Archival.History = config.HistoryArchival{State: "enabled", EnableRead: true, Provider: hp}
	conf.Archival.Visibility = config.VisibilityArchival{State: "enabled", EnableRead: true, Provider: vp}
	conf.NamespaceDefaults.Archival.History.State = "enabled"
	conf.NamespaceDefaults.Archival.History.URI = a.HistoryURI
	conf.NamespaceDefaults.Archival.Visibility.State = "enabled"
	conf.NamespaceDefaults.Archival.Visibility.URI = a.VisibilityURI
}

// retentionDynamicConfig lets namespaces take a retention down to a
// second (the server's minimum is an hour; Windlass checks its own
// setting) and sets the deletion jitter, by default scaled to the
// configured retention.
func retentionDynamicConfig(dc dynamicconfig.StaticClient, retention, jitter time.Duration) {
	if jitter <= 0 {
		jitter = retentionJitter(retention)
	}
	dc[dynamicconfig.NamespaceMinRetentionLocal.Key()] = time.Second
	dc[dynamicconfig.NamespaceMinRetentionGlobal.Key()] = time.Second
	dc[dynamicconfig.RetentionTimerJitterDuration.Key()] = jitter
}

// newNamespaceConfig sets the retention and archival of a namespace about
// to be created in the database.
func newNamespaceConfig(nc *persistencespb.NamespaceConfig, retention time.Duration, a *ArchivalConfig) {
	nc.Retention = durationpb.New(retention)
	if a == nil {
		return
	}
	nc.HistoryArchivalState = enums.ARCHIVAL_STATE_ENABLED
	nc.HistoryArchivalUri = a.HistoryURI
	nc.VisibilityArchivalState = enums.ARCHIVAL_STATE_ENABLED
	nc.VisibilityArchivalUri = a.VisibilityURI
}

// reconcileNamespace brings an existing namespace's retention and archival
// to the configured ones. Temporal never moves an archive: a namespace that
// already archives to another URI is an error.
func reconcileNamespace(ctx context.Context, svc workflowservice.WorkflowServiceClient, namespace string, retention time.Duration, a *ArchivalConfig, logger *slog.Logger) error {
	d, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("describe namespace %s: %w", namespace, err)
	}
	cur := d.GetConfig()
	want := &namespacepb.NamespaceConfig{}
	changed := false
	if cur.GetWorkflowExecutionRetentionTtl().AsDuration() != retention {
		want.WorkflowExecutionRetentionTtl = durationpb.New(retention)
		changed = true
	}
	if a != nil {
		for _, arc := range []struct {
			what        string
			curState    enums.ArchivalState
			curURI, URI string
			setState    *enums.ArchivalState
			setURI      *string
		}{
			{"history", cur.GetHistoryArchivalState(), cur.GetHistoryArchivalUri(), a.HistoryURI, &want.HistoryArchivalState, &want.HistoryArchivalUri},
			{"visibility", cur.GetVisibilityArchivalState(), cur.GetVisibilityArchivalUri(), a.VisibilityURI, &want.VisibilityArchivalState, &want.VisibilityArchivalUri},
		} {
			if arc.curURI != "" && arc.curURI != arc.URI {
				return fmt.Errorf("namespace %s archives %s to %s; Temporal cannot move an archive to %s (keep the URI, or use a new namespace)",
					namespace, arc.what, arc.curURI, arc.URI)
			}
			if arc.curState != enums.ARCHIVAL_STATE_ENABLED || arc.curURI != arc.URI {
				*arc.setState, *arc.setURI = enums.ARCHIVAL_STATE_ENABLED, arc.URI
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	if _, err := svc.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{Namespace: namespace, Config: want}); err != nil {
		return fmt.Errorf("update namespace %s: %w", namespace, err)
	}
	logger.Info("temporal namespace updated", "namespace", namespace, "retention", retention,
		"history_archive", want.GetHistoryArchivalUri(), "visibility_archive", want.GetVisibilityArchivalUri())
	return nil
}

// schemes lists the URI schemes in use, to configure only their archivers.
func (a *ArchivalConfig) schemes() map[string]bool {
	out := map[string]bool{}
	for _, uri := range []string{a.HistoryURI, a.VisibilityURI} {
		if i := strings.Index(uri, "://"); i > 0 {
			out[uri[:i]] = true
		}
	}
	return out
}

// retentionJitter spreads the deletion of closed workflows over a tenth of
// the retention, at most the server's default of 30 minutes.
func retentionJitter(retention time.Duration) time.Duration {
	return min(30*time.Minute, retention/10)
}
