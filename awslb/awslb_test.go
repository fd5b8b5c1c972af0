package awslb

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/repro-tools/repro/results"
)

const ns = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"

// elbv2Server speaks the ELBv2 query protocol (form-encoded Action=...,
// XML answers in the documented shape) for one cluster "infra-x" with an
// internal load balancer only (a private cluster) carrying the API (6443)
// and machine config server (22623) target groups.
type elbv2Server struct {
	t  *testing.T
	mu sync.Mutex
	// health is the sequence of (state, reason, description) answers for
	// target i-1; the last repeats. throttleAt lists the DescribeTargetHealth
	// calls (0-based) answered with Throttling.
	health     [][3]string
	throttleAt map[int]bool
	calls      int
	actions    []string
}

func (s *elbv2Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.t.Errorf("form: %v", err)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		s.t.Errorf("request not signed with SigV4: %q", r.Header.Get("Authorization"))
	}
	action := r.Form.Get("Action")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, action)
	if !strings.HasPrefix(action, "Describe") {
		s.t.Errorf("non-read-only call %s", action)
	}
	w.Header().Set("Content-Type", "text/xml")
	switch action {
	case "DescribeLoadBalancers":
		name := r.Form.Get("Names.member.1")
		if name != "infra-x-int" {
			fail(w, "LoadBalancerNotFound", "Load balancers '["+name+"]' not found")
			return
		}
		ok(w, action, `<LoadBalancers><member><LoadBalancerArn>arn:lb/int</LoadBalancerArn><LoadBalancerName>infra-x-int</LoadBalancerName><Scheme>internal</Scheme><Type>network</Type></member></LoadBalancers>`)
	case "DescribeTargetGroups":
		if r.Form.Get("LoadBalancerArn") != "arn:lb/int" {
			fail(w, "TargetGroupNotFound", "One or more target groups not found")
			return
		}
		ok(w, action, `<TargetGroups>`+
			`<member><TargetGroupArn>arn:tg/api</TargetGroupArn><TargetGroupName>apiserver-target-1</TargetGroupName><Port>6443</Port><Protocol>TCP</Protocol></member>`+
			`<member><TargetGroupArn>arn:tg/mcs</TargetGroupArn><TargetGroupName>additional-listener-22623</TargetGroupName><Port>22623</Port><Protocol>TCP</Protocol></member>`+
			`</TargetGroups>`)
	case "DescribeTags":
		ok(w, action, `<TagDescriptions><member><ResourceArn>`+r.Form.Get("ResourceArns.member.1")+`</ResourceArn><Tags><member><Key>kubernetes.io/cluster/infra-x</Key><Value>owned</Value></member></Tags></member></TagDescriptions>`)
	case "DescribeTargetHealth":
		n := s.calls
		s.calls++
		if s.throttleAt[n] {
			fail(w, "Throttling", "Rate exceeded")
			return
		}
		h := s.health[min(n, len(s.health)-1)]
		th := `<State>` + h[0] + `</State>`
		if h[1] != "" {
			th += `<Reason>` + h[1] + `</Reason><Description>` + h[2] + `</Description>`
		}
		ok(w, action, `<TargetHealthDescriptions>`+
			`<member><Target><Id>i-1</Id><Port>6443</Port></Target><HealthCheckPort>6443</HealthCheckPort><TargetHealth>`+th+`</TargetHealth></member>`+
			`<member><Target><Id>i-2</Id><Port>6443</Port></Target><HealthCheckPort>6443</HealthCheckPort><TargetHealth><State>healthy</State></TargetHealth></member>`+
			`</TargetHealthDescriptions>`)
	default:
		fail(w, "InvalidAction", action)
	}
}

func ok(w http.ResponseWriter, action, body string) {
	fmt.Fprintf(w, `<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></%sResponse>`,
		action, ns, action, body, action, action)
}

func fail(w http.ResponseWriter, code, msg string) {
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>r-2</RequestId></ErrorResponse>`, ns, code, msg)
}

// client is the SDK's real ELBv2 client aimed at srv with static
// credentials; attempts is the retryer's (1: throttling reaches the poller).
func client(srv *httptest.Server, attempts int) *elbv2.Client {
	return elbv2.New(elbv2.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:   srv.Client(),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.Backoff = retry.NewExponentialJitterBackoff(5 * time.Millisecond)
		}),
	})
}

func TestFromInfrastructure(t *testing.T) {
	infra := &configv1.Infrastructure{}
	infra.Status.InfrastructureName = "infra-x"
	infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformStatus{Region: "eu-west-1"}}
	c, err := FromInfrastructure(infra)
	if err != nil || c.InfraID != "infra-x" || c.Region != "eu-west-1" {
		t.Fatalf("%+v %v", c, err)
	}
	infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.GCPPlatformType}
	if _, err := FromInfrastructure(infra); err == nil || !strings.Contains(err.Error(), "GCP") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("GCP: %v", err)
	}
}

func TestDiscoverFindsTheAPITargetGroupNotTheMachineConfigServers(t *testing.T) {
	fake := &elbv2Server{t: t, health: [][3]string{{"healthy"}}}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	groups, err := Discover(context.Background(), client(srv, 1), "infra-x")
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].ARN != "arn:tg/api" || groups[0].Scheme != "internal" || !groups[0].Owned || groups[0].LoadBalancer != "infra-x-int" {
		t.Fatalf("groups %+v", groups)
	}
}

func TestDiscoverSaysWhatItLookedFor(t *testing.T) {
	fake := &elbv2Server{t: t, health: [][3]string{{"healthy"}}}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	// No load balancer of that name: the Terraform-era target group names
	// are tried, and the error names every name looked for.
	_, err := Discover(context.Background(), client(srv, 1), "other")
	if err == nil || !strings.Contains(err.Error(), "other-int") || !strings.Contains(err.Error(), "other-aint") {
		t.Fatalf("err %v", err)
	}
}

func TestPollerRecordsChangesAndBacksOffWhenThrottled(t *testing.T) {
	fake := &elbv2Server{t: t,
		health: [][3]string{
			{"healthy"}, {"healthy"}, {"healthy"},
			{"unhealthy", "Target.ResponseCodeMismatch", "Health checks failed with these codes: [500]"},
			{"unhealthy", "Target.ResponseCodeMismatch", "Health checks failed with these codes: [500]"},
			{"healthy"},
		},
		throttleAt: map[int]bool{1: true, 2: true}}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	api := client(srv, 1)
	groups, err := Discover(context.Background(), api, "infra-x")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []results.Signal
	ctx, cancel := context.WithCancel(context.Background())
	p := &Poller{API: api, Groups: groups, Interval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		Names: NodeNames([]corev1.Node{{Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-1"}}}),
		Emit: func(s results.Signal) {
			mu.Lock()
			defer mu.Unlock()
			recs = append(recs, s)
			if len(recs) == 4 {
				cancel()
			}
		}}
	p.Names["i-1"] = "master-0"
	st := p.Run(ctx)
	if st.Throttled != 2 {
		t.Errorf("throttled %d, want 2", st.Throttled)
	}
	mu.Lock()
	defer mu.Unlock()
	// i-1 healthy, i-2 healthy, i-1 unhealthy, i-1 healthy again.
	want := []struct{ inst, state, reason string }{
		{"master-0", "healthy", ""}, {"i-2", "healthy", ""},
		{"master-0", "unhealthy", "Target.ResponseCodeMismatch"}, {"master-0", "healthy", ""},
	}
	if len(recs) != len(want) {
		t.Fatalf("records %+v", recs)
	}
	for i, w := range want {
		r := recs[i]
		if r.Kind != results.SignalLBTargetHealth || r.Source != Source || r.Instance != w.inst || r.Labels["state"] != w.state || r.Labels["reason"] != w.reason {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if recs[2].Message == "" || recs[2].Labels["previous_poll"] == "" || recs[2].Value != 0 || recs[3].Value != 1 {
		t.Errorf("unhealthy record %+v", recs[2])
	}
}

func TestTheSDKRetriesAThrottledCall(t *testing.T) {
	fake := &elbv2Server{t: t, health: [][3]string{{"healthy"}}, throttleAt: map[int]bool{0: true}}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	out, err := client(srv, 3).DescribeTargetHealth(context.Background(), &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String("arn:tg/api")})
	if err != nil || len(out.TargetHealthDescriptions) != 2 {
		t.Fatalf("%v %v", out, err)
	}
	if fake.calls != 2 {
		t.Fatalf("calls %d, want the throttled one and its retry", fake.calls)
	}
}
