// Package promserver runs a real Prometheus (the binary lab/binaries builds
// from the Go module proxy) against static scrape targets: the lab's
// monitoring, which metrics.Querier reads exactly as it reads a cluster's
// thanos-querier. It writes the configuration, starts the server on a
// loopback port, waits for /-/ready and stops it.
package promserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/repro-tools/repro/lab/proc"
)

// Job is one scrape job: targets of one kind, with one TLS setting.
type Job struct {
	Name string
	// Scheme is http or https.
	Scheme string
	// CAFile, CertFile and KeyFile are the TLS files (https only): the CA
	// the targets' serving certificates are checked against and the client
	// certificate Prometheus presents.
	CAFile, CertFile, KeyFile string
	// ServerName, when set, is what the serving certificates are verified
	// against.
	ServerName string
	Targets    []Target
}

// Target is one host:port with the labels its series get (node=master-1).
type Target struct {
	Addr   string
	Labels map[string]string
}

// Options configure a server.
type Options struct {
	// Binary is the prometheus executable.
	Binary string
	// Dir holds the configuration, the TSDB and the log.
	Dir string
	// Interval is the scrape interval (and timeout).
	Interval time.Duration
	Jobs     []Job
	// StartTimeout bounds the wait for /-/ready.
	StartTimeout time.Duration
}

// Server is a running Prometheus.
type Server struct {
	p       *proc.Process
	url     string
	logPath string
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.url }

// LogPath is the server's log file.
func (s *Server) LogPath() string { return s.logPath }

// Config renders the Prometheus configuration for o.
func Config(o Options) ([]byte, error) {
	type tlsConfig struct {
		CAFile     string `json:"ca_file,omitempty"`
		CertFile   string `json:"cert_file,omitempty"`
		KeyFile    string `json:"key_file,omitempty"`
		ServerName string `json:"server_name,omitempty"`
	}
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type job struct {
		JobName       string     `json:"job_name"`
		Scheme        string     `json:"scheme"`
		TLSConfig     *tlsConfig `json:"tls_config,omitempty"`
		StaticConfigs []static   `json:"static_configs"`
	}
	iv := model(o.Interval)
	cfg := struct {
		Global        map[string]string `json:"global"`
		ScrapeConfigs []job             `json:"scrape_configs"`
	}{Global: map[string]string{"scrape_interval": iv, "scrape_timeout": iv, "evaluation_interval": iv}}
	for _, j := range o.Jobs {
		out := job{JobName: j.Name, Scheme: j.Scheme}
		if j.Scheme == "" {
			out.Scheme = "http"
		}
		if out.Scheme == "https" {
			out.TLSConfig = &tlsConfig{CAFile: j.CAFile, CertFile: j.CertFile, KeyFile: j.KeyFile, ServerName: j.ServerName}
		}
		for _, t := range j.Targets {
			out.StaticConfigs = append(out.StaticConfigs, static{Targets: []string{t.Addr}, Labels: t.Labels})
		}
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, out)
	}
	return yaml.Marshal(cfg)
}

// model renders a duration in Prometheus' own form (1s, 500ms).
func model(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.Itoa(int(d/time.Second)) + "s"
	}
	return strconv.Itoa(int(d/time.Millisecond)) + "ms"
}

// Start writes the configuration and starts Prometheus, returning once it
// is ready to answer queries.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = time.Minute
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	b, err := Config(o)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(o.Dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(o.Dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(o.Binary,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(o.Dir, "data"),
		"--web.listen-address="+addr,
		// A run's window only: nothing is kept past the lab.
		"--storage.tsdb.retention.time=1d",
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting prometheus %s: %w", o.Binary, err)
	}
	s := &Server{p: p, url: "http://" + addr, logPath: logPath}
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(o.StartTimeout)
	for {
		resp, err := hc.Get(s.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-p.Exited():
			return nil, fmt.Errorf("prometheus exited at start (%s); last lines of %s:\n%s", p.ExitStatus(), logPath, proc.Tail(logPath, 15))
		case <-ctx.Done():
			_ = p.Kill()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.Kill()
			return nil, fmt.Errorf("prometheus not ready after %s; last lines of %s:\n%s", o.StartTimeout, logPath, proc.Tail(logPath, 15))
		}
	}
}

// Stop stops the server (its data goes with the caller's directory).
func (s *Server) Stop() error {
	if s == nil || s.p == nil {
		return nil
	}
	_, err := s.p.Terminate(5 * time.Second)
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
