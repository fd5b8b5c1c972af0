package lab

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/repro-tools/repro/lab/proc"
)

// etcdMember is the lab's etcd: one member on loopback. One member is
// enough: the lab studies the apiservers' rollout, and every apiserver
// reaches etcd through its own proxy, which is where a per-node etcd fault
// belongs.
type etcdMember struct {
	bin string
	// url is its client URL, proc the process (nil until started).
	url  string
	proc *proc.Process
}

// addr is the member's client address (host:port).
func (e *etcdMember) addr() string { return e.url[len("http://"):] }

// kill SIGKILLs the member at lab stop.
func (e *etcdMember) kill() error {
	if e.proc == nil {
		return nil
	}
	return e.proc.Kill()
}

// start runs the member with its data and log under dir and waits until it
// is healthy.
func (e *etcdMember) start(ctx context.Context, dir string, log *zap.Logger) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	e.url = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	logPath := filepath.Join(dir, "logs", "etcd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(e.bin,
		"--name=lab",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+e.url,
		"--advertise-client-urls="+e.url,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=lab="+peer,
		"--initial-cluster-state=new",
		// A disposable store on a shared disk: fsync latency would add
		// stalls the field's dedicated etcd disks do not have.
		"--unsafe-no-fsync",
		"--quota-backend-bytes=2147483648",
		"--log-level=warn",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := proc.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting etcd %s: %w", e.bin, err)
	}
	e.proc = p
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{}, DisableKeepAlives: true}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(e.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				log.Info("etcd is ready", zap.String("url", e.url), zap.Int("pid", p.PID()))
				return nil
			}
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("etcd exited at start (%s); last lines of %s:\n%s", p.ExitStatus(), logPath, proc.Tail(logPath, 15))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd not healthy after 30s; last lines of %s:\n%s", logPath, proc.Tail(logPath, 15))
		}
	}
}

// tlsConfig trusts the lab CA; admin adds the system:admin client cert.
func (l *Lab) tlsConfig(admin bool) *tls.Config {
	c := &tls.Config{RootCAs: l.pki.CAPool, MinVersion: tls.VersionTLS12}
	if admin {
		cert, err := tls.X509KeyPair(l.pki.AdminCertPEM, l.pki.AdminKeyPEM)
		if err == nil {
			c.Certificates = []tls.Certificate{cert}
		}
	}
	return c
}
