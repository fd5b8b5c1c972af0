package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/repro-tools/repro/lab/load"
	"github.com/repro-tools/repro/lab/proc"
	"github.com/repro-tools/repro/results"
)

// LoadEventsFile, in the lab's directory, is where the load process writes
// its outcomes before the run copies them, targets named, into its results.
const LoadEventsFile = "load-events.jsonl"

// loadProc is the running load process (Options.Load).
type loadProc struct {
	mu     sync.Mutex
	spec   load.Spec
	p      *proc.Process
	record *results.LoadRecord
	events string
}

// startLoad starts the load process, repro itself re-executed as `repro
// lab load` (Options.LoadCommand), with its clients' credentials, and
// waits until its reflectors have synced.
func (l *Lab) startLoad(ctx context.Context) error {
	spec, ok, err := load.Lookup(l.opts.Load)
	if err != nil || !ok {
		return err
	}
	cfg, err := l.loadConfig(ctx, spec)
	if err != nil {
		return fmt.Errorf("load %s: %w", spec.Name, err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(l.dir, "load-config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return err
	}
	argv := l.opts.LoadCommand
	if len(argv) == 0 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		argv = []string{self, "lab", "load"}
	}
	logPath := filepath.Join(l.dir, "logs", "load.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], append(argv[1:], "--config", cfgPath)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The clients of OpenShift 4.16 and 4.17 (client-go 0.29, 0.30) list
	// then watch; client-go's streaming lists (KEP-3157) came later.
	cmd.Env = append(os.Environ(), "KUBE_FEATURE_WatchListClient=false")
	p, err := proc.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting the load process: %w", err)
	}
	l.load = &loadProc{spec: spec, p: p, events: cfg.Events}
	l.log.Info("load process started", zap.String("load", spec.Name), zap.Int("pid", p.PID()))
	for {
		if _, err := os.Stat(cfg.Ready); err == nil {
			break
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("the load process exited before its reflectors synced (%s): %s", p.ExitStatus(), proc.Tail(logPath, 600))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	l.log.Info("load is running", zap.String("load", spec.Name))
	return nil
}

// loadConfig issues the load's identities: client certificates from the
// lab's CA for the kubelets (system:node:<name> in system:nodes),
// kube-proxy and kube-controller-manager, as their bootstrap RBAC bindings
// name them, and a service-account token for the ReplicaSet controller's
// writes (kube-system/replicaset-controller, as kube-controller-manager's
// --use-service-account-credentials makes them).
func (l *Lab) loadConfig(ctx context.Context, spec load.Spec) (load.Config, error) {
	cfg := load.Config{Spec: spec.Name, URL: l.URL(), CAPEM: l.pki.CAPEM,
		Events: filepath.Join(l.dir, LoadEventsFile), Ready: filepath.Join(l.dir, "load-ready"),
		Admin: load.Creds{User: "system:admin", CertPEM: l.pki.AdminCertPEM, KeyPEM: l.pki.AdminKeyPEM}}
	nodes, _, _ := spec.Scaled()
	issue := func(user string, groups ...string) (load.Creds, error) {
		c, k, err := l.pki.IssueClient(user, groups...)
		return load.Creds{User: user, CertPEM: c, KeyPEM: k}, err
	}
	for i := range nodes {
		c, err := issue("system:node:worker-"+strconv.Itoa(i), "system:nodes")
		if err != nil {
			return cfg, err
		}
		cfg.Kubelets = append(cfg.Kubelets, c)
	}
	var err error
	if cfg.Proxy, err = issue("system:kube-proxy"); err != nil {
		return cfg, err
	}
	if cfg.KCM, err = issue("system:kube-controller-manager"); err != nil {
		return cfg, err
	}
	const ns, sa = "kube-system", "replicaset-controller"
	if _, err := l.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return cfg, fmt.Errorf("service account %s/%s: %w", ns, sa, err)
	}
	tr, err := l.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return cfg, fmt.Errorf("token for %s/%s: %w", ns, sa, err)
	}
	cfg.ReplicaSet = load.Creds{User: "system:serviceaccount:" + ns + ":" + sa, Token: tr.Status.Token}
	return cfg, nil
}

// StopLoad stops the load process (if one runs) and returns what run.json
// records of it; events is the file of its outcomes, targets not yet named.
// It is idempotent; Stop calls it too.
func (l *Lab) StopLoad() (rec *results.LoadRecord, events string) {
	lp := l.load
	if lp == nil {
		return nil, ""
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.record != nil {
		return lp.record, lp.events
	}
	r := &results.LoadRecord{Name: lp.spec.Name, ScaleDown: lp.spec.ScaleDown, PID: lp.p.PID(), Cores: runtime.NumCPU()}
	// Read before the stop: once reaped its /proc entry is gone.
	if cpu, err := results.ProcCPUSeconds(lp.p.PID()); err == nil {
		r.CPUSeconds = cpu
	}
	if la, err := results.LoadAvg1(); err == nil {
		r.LoadAvg1 = la
	}
	if _, err := lp.p.Terminate(2 * time.Second); err != nil {
		l.log.Warn("stopping the load process", zap.Error(err))
	}
	lp.record = r
	return r, lp.events
}
