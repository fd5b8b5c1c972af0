package awslb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	configv1 "github.com/openshift/api/config/v1"

	"github.com/repro-tools/repro/results"
)

// APIPort is kube-apiserver's port behind the API load balancers; the
// machine config server's listener (22623) on the internal one is not
// polled.
const APIPort = 6443

// API is the part of the ELBv2 client awslb calls: describe calls only.
type API interface {
	DescribeLoadBalancers(context.Context, *elbv2.DescribeLoadBalancersInput, ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancersOutput, error)
	DescribeTargetGroups(context.Context, *elbv2.DescribeTargetGroupsInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error)
	DescribeTargetHealth(context.Context, *elbv2.DescribeTargetHealthInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error)
	DescribeTags(context.Context, *elbv2.DescribeTagsInput, ...func(*elbv2.Options)) (*elbv2.DescribeTagsOutput, error)
}

// Permissions are the IAM actions --aws-lb needs, all read-only.
var Permissions = []string{
	"elasticloadbalancing:DescribeLoadBalancers",
	"elasticloadbalancing:DescribeTargetGroups",
	"elasticloadbalancing:DescribeTargetHealth",
	"elasticloadbalancing:DescribeTags",
}

// Cluster is what the Infrastructure says about an AWS cluster's load
// balancers.
type Cluster struct {
	// InfraID is status.infrastructureName, the prefix of every name the
	// installer gives the cluster's AWS resources.
	InfraID string
	// Region is status.platformStatus.aws.region.
	Region string
}

// FromInfrastructure reads the infrastructure name and region, or says in
// one line why --aws-lb cannot be used on this cluster.
func FromInfrastructure(infra *configv1.Infrastructure) (Cluster, error) {
	ps := infra.Status.PlatformStatus
	if ps == nil || ps.Type != configv1.AWSPlatformType {
		platform := "unknown"
		if ps != nil {
			platform = string(ps.Type)
		}
		return Cluster{}, fmt.Errorf("--aws-lb reads AWS load balancers only, and this cluster's platform is %s: drop --aws-lb (other platforms are out of scope)", platform)
	}
	c := Cluster{InfraID: infra.Status.InfrastructureName}
	if ps.AWS != nil {
		c.Region = ps.AWS.Region
	}
	if c.InfraID == "" || c.Region == "" {
		return Cluster{}, fmt.Errorf("--aws-lb: the Infrastructure has no infrastructureName or AWS region (infrastructureName %q, region %q): drop --aws-lb", c.InfraID, c.Region)
	}
	return c, nil
}

// NewClient builds an ELBv2 client for region from the SDK's default
// credential chain (environment, shared config and credentials files, SSO,
// web identity, instance role). Throttled calls are retried by the SDK's
// standard retryer with its exponential backoff; its client-side token
// bucket stops retrying when throttles pile up, and the poller then slows
// down (see Poller).
func NewClient(ctx context.Context, region string, optFns ...func(*elbv2.Options)) (*elbv2.Client, error) {
	// The SDK's standard retryer is the default: 3 attempts, exponential
	// backoff with jitter up to 20 s, throttling codes ("Throttling",
	// "RequestLimitExceeded", ...) retried, and a client-side token bucket
	// of 500 that a retry costs 5 of (aws-sdk-go-v2 aws/retry standard.go).
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("--aws-lb: AWS configuration: %w", err)
	}
	return elbv2.NewFromConfig(cfg, optFns...), nil
}

// TargetGroup is one of the cluster's API target groups.
type TargetGroup = results.AWSTargetGroup

// Discover finds the cluster's API target groups (port 6443), internal and
// external. The installer names the API load balancers "<infraID>-int" and
// "<infraID>-ext" (openshift/installer pkg/asset/manifests/aws/cluster.go,
// the AWSCluster's ControlPlaneLoadBalancer and
// SecondaryControlPlaneLoadBalancer; a private cluster has no -ext). Their
// target groups are read from the load balancers, since CAPA names them
// itself; before CAPI the installer named the API target groups
// "<infraID>-aint" and "<infraID>-aext" (openshift/installer
// data/data/aws/cluster/vpc/master-elb.tf), which are looked up by name when
// no load balancer is found.
func Discover(ctx context.Context, api API, infraID string) ([]TargetGroup, error) {
	var groups []TargetGroup
	for _, name := range []string{infraID + "-int", infraID + "-ext"} {
		out, err := api.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
		if isCode(err, "LoadBalancerNotFound") {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("--aws-lb: describing load balancer %s: %w", name, err)
		}
		for _, lb := range out.LoadBalancers {
			tgs, err := api.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn})
			if err != nil {
				return nil, fmt.Errorf("--aws-lb: describing %s's target groups: %w", name, err)
			}
			for _, tg := range tgs.TargetGroups {
				if aws.ToInt32(tg.Port) != APIPort {
					continue
				}
				groups = append(groups, TargetGroup{Name: aws.ToString(tg.TargetGroupName), ARN: aws.ToString(tg.TargetGroupArn),
					LoadBalancer: aws.ToString(lb.LoadBalancerName), Scheme: string(lb.Scheme), Port: APIPort})
			}
		}
	}
	if len(groups) == 0 {
		out, err := api.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{infraID + "-aint", infraID + "-aext"}})
		if err != nil && !isCode(err, "TargetGroupNotFound") {
			return nil, fmt.Errorf("--aws-lb: describing target groups %s-aint/-aext: %w", infraID, err)
		}
		if out != nil {
			for _, tg := range out.TargetGroups {
				if aws.ToInt32(tg.Port) != APIPort {
					continue
				}
				scheme := "internal"
				if strings.HasSuffix(aws.ToString(tg.TargetGroupName), "-aext") {
					scheme = "internet-facing"
				}
				groups = append(groups, TargetGroup{Name: aws.ToString(tg.TargetGroupName), ARN: aws.ToString(tg.TargetGroupArn), Scheme: scheme, Port: APIPort})
			}
		}
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("--aws-lb: no API target group (port %d) found for infrastructure %s: neither load balancers %s-int/%s-ext nor target groups %s-aint/%s-aext exist in this account and region; check the AWS profile and drop --aws-lb if the cluster's load balancers are not the installer's",
			APIPort, infraID, infraID, infraID, infraID, infraID)
	}
	// The ownership tag confirms these belong to this cluster and not to
	// another one with a colliding name.
	arns := make([]string, len(groups))
	for i, g := range groups {
		arns[i] = g.ARN
	}
	tags, err := api.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: arns})
	if err != nil {
		return nil, fmt.Errorf("--aws-lb: describing the target groups' tags: %w", err)
	}
	owned := map[string]bool{}
	for _, d := range tags.TagDescriptions {
		for _, t := range d.Tags {
			if aws.ToString(t.Key) == "kubernetes.io/cluster/"+infraID {
				owned[aws.ToString(d.ResourceArn)] = true
			}
		}
	}
	for i := range groups {
		groups[i].Owned = owned[groups[i].ARN]
	}
	return groups, nil
}

// isCode reports whether err is an AWS API error with the given code.
func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

// throttled reports whether err is AWS throttling (the retryer gave up on
// it, or its token bucket ran dry).
func throttled(err error) bool {
	if err == nil {
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if _, ok := retry.DefaultThrottleErrorCodes[ae.ErrorCode()]; ok {
			return true
		}
	}
	return errors.As(err, new(ratelimit.QuotaExceededError))
}

// stateOf is a target's health state, reason and description.
func stateOf(h *types.TargetHealth) (state, reason, desc string) {
	if h == nil {
		return "unknown", "", ""
	}
	return string(h.State), string(h.Reason), aws.ToString(h.Description)
}
