package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// defaultAPIServer is the API of `windlass dev`.
const defaultAPIServer = "http://127.0.0.1:8080"

// clientConfig is the client's config file: the server logged in to, the
// user and the session token. It is YAML (JSON is read too), mode 0600 in
// a directory of mode 0700.
type clientConfig struct {
	Server   string `json:"server,omitempty"`
	Username string `json:"username,omitempty"`
	Token    string `json:"token,omitempty"`
}

// configPath is --config, else $XDG_CONFIG_HOME/windlass/config, else
// ~/.config/windlass/config.
func (c *cli) configPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if x := c.getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "windlass", "config"), nil
	}
	home := c.getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("find the config file: %w (use --config)", err)
		}
	}
	return filepath.Join(home, ".config", "windlass", "config"), nil
}

// loadConfig reads the config file; a missing file is an empty config.
func (c *cli) loadConfig(path string) (clientConfig, error) {
	var cfg clientConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("read config %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("read config %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 && cfg.Token != "" {
		fmt.Fprintf(c.stderr, "windlass: warning: %s holds a token and others may read it (mode %04o); run chmod 600 %s\n",
			path, fi.Mode().Perm(), path)
	}
	return cfg, nil
}

// saveConfig writes the config file atomically with mode 0600, creating
// its directory with mode 0700.
func saveConfig(path string, cfg clientConfig) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	f, err := os.CreateTemp(dir, ".config-*")
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write config %s: %w", path, err)
	}
	return nil
}

// normalizeServer trims a trailing slash and adds https:// when the URL
// has no scheme.
func normalizeServer(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), "/")
	if s != "" && !strings.Contains(s, "://") {
		s = "https://" + s
	}
	return s
}

// session is the connection a verb uses, and the config it came from.
type session struct {
	api        *apiClient
	cfg        clientConfig
	configPath string
}

// connect resolves the server (--server, WINDLASS_SERVER, the config
// file, the dev default) and the token (WINDLASS_TOKEN, else the config's
// token, sent only to the server it was issued by).
func (f *flags) connect() (*session, error) {
	c := f.cli
	path, err := c.configPath(f.config)
	if err != nil {
		return nil, err
	}
	cfg, err := c.loadConfig(path)
	if err != nil {
		return nil, err
	}
	server := defaultAPIServer
	for _, s := range []string{f.server, c.getenv("WINDLASS_SERVER"), cfg.Server} {
		if s != "" {
			server = s
			break
		}
	}
	server = normalizeServer(server)
	token := c.getenv("WINDLASS_TOKEN")
	if token == "" && server == normalizeServer(cfg.Server) {
		token = cfg.Token
	}
	return &session{api: &apiClient{base: server, token: token, http: c.http, warn: c.stderr}, cfg: cfg, configPath: path}, nil
}

// start parses args, with n positional arguments, and connects.
func (f *flags) start(args []string, n int) ([]string, *session, error) {
	pos, err := f.parse(args, n)
	if err != nil {
		return nil, nil, err
	}
	s, err := f.connect()
	return pos, s, err
}
