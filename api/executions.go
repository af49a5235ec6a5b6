package api

import (
	"context"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// eachExecution calls fn for every execution that matches the visibility
// query, a page of 1000 at a time; an error from fn stops the walk.
func (s *Server) eachExecution(ctx context.Context, query string, fn func(*workflowpb.WorkflowExecutionInfo) error) error {
	return walkExecutions(ctx, query, s.executionPage, fn)
}

// pageReader reads a page of executions, as executionPage does.
type pageReader func(ctx context.Context, query string, size int, token []byte) (*workflowservice.ListWorkflowExecutionsResponse, error)

// walkExecutions is eachExecution over the pages that read reads.
func walkExecutions(ctx context.Context, query string, read pageReader, fn func(*workflowpb.WorkflowExecutionInfo) error) error {
	var token []byte
	for {
		resp, err := read(ctx, query, 1000, token)
		if err != nil {
			return err
		}
		for _, e := range resp.Executions {
			if err := fn(e); err != nil {
				return err
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return nil
		}
	}
}

// executionPage reads one page of up to size executions that match the
// visibility query, at token (nil: the first page).
func (s *Server) executionPage(ctx context.Context, query string, size int, token []byte) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	return s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: s.opts.Namespace, PageSize: int32(size), NextPageToken: token, Query: query,
	})
}
