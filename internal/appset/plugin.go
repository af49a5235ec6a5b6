package appset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// pluginPath is where a plugin service answers, as in Argo CD.
const pluginPath = "/api/v1/getparams.execute"

type pluginRequest struct {
	ApplicationSetName string      `json:"applicationSetName"`
	Input              PluginInput `json:"input"`
}

type pluginResponse struct {
	Output struct {
		Parameters []map[string]any `json:"parameters"`
	} `json:"output"`
}

// plugin POSTs the input to the plugin service its settings name and
// yields the parameter sets it answers.
func (ev *evaluation) plugin(ctx context.Context, pg *PluginGenerator, field string) ([]Params, error) {
	if ev.g.secrets == nil {
		return nil, fmt.Errorf("%w: plugin generator: no secret store is configured", ErrUnavailable)
	}
	name := pg.ConfigMapRef.Name
	cfg, err := ev.g.secrets.Get(ctx, PluginSecretPrefix+name)
	if err != nil {
		return nil, fmt.Errorf("%s: plugin %s: read its settings %s%s: %w", field, name, PluginSecretPrefix, name, err)
	}
	base := strings.TrimSuffix(string(cfg["baseUrl"]), "/")
	if base == "" {
		return nil, fmt.Errorf("%w: %s: plugin %s: its settings have no baseUrl", ErrInvalid, field, name)
	}
	timeout := DefaultPluginTimeout
	if s := string(cfg["requestTimeout"]); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: %s: plugin %s: requestTimeout %q: want whole seconds", ErrInvalid, field, name, s)
		}
		timeout = time.Duration(n) * time.Second
	}
	body, err := json.Marshal(pluginRequest{ApplicationSetName: ev.set.Metadata.Name, Input: pg.Input})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+pluginPath, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: plugin %s: %w", ErrInvalid, field, name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok := string(cfg["token"]); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := ev.g.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s: plugin %s did not answer within %s", ErrSource, field, name, timeout)
		}
		return nil, fmt.Errorf("%w: %s: plugin %s: %w", ErrSource, field, name, err)
	}
	defer resp.Body.Close()
	var out pluginResponse
	if err := readJSON(resp, &out); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s: plugin %s did not answer within %s", ErrSource, field, name, timeout)
		}
		return nil, fmt.Errorf("%w: %s: plugin %s: %w", ErrSource, field, name, err)
	}
	params := make([]Params, 0, len(out.Output.Parameters))
	for _, p := range out.Output.Parameters {
		q := Params(p)
		q["generator"] = map[string]any{"input": map[string]any{"parameters": pg.Input.Parameters}}
		if q, err = q.withValues(pg.Values, ev.r); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		params = append(params, q)
	}
	return params, nil
}

// maxBody bounds what is read of a plugin's or provider's answer.
const maxBody = 32 << 20

// readJSON decodes a 2xx answer; any other status is an error quoting the
// start of the body.
func readJSON(resp *http.Response, out any) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet := strings.TrimSpace(string(body))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "..."
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, snippet)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}
