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

// startEtcd runs one etcd member on loopback. One member is enough: the lab
// studies the apiservers' rollout, and every apiserver reaches etcd through
// its own proxy, which is where a per-node etcd fault belongs.
func (l *Lab) startEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	l.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	logPath := filepath.Join(l.dir, "logs", "etcd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(l.etcdBin,
		"--name=lab",
		"--data-dir="+filepath.Join(l.dir, "etcd"),
		"--listen-client-urls="+l.etcdURL,
		"--advertise-client-urls="+l.etcdURL,
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
		return fmt.Errorf("starting etcd %s: %w", l.etcdBin, err)
	}
	l.etcd = p
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{}, DisableKeepAlives: true}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(l.etcdURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				l.log.Info("etcd is ready", zap.String("url", l.etcdURL), zap.Int("pid", p.PID()))
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
