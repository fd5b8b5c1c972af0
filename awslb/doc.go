// Package awslb reads an AWS cluster's API load balancers' view of their
// targets during a run: which kube-apiserver targets the NLBs believed
// healthy, and why not, polled every second.
//
// It makes read-only ELBv2 describe calls only (DescribeLoadBalancers,
// DescribeTargetGroups, DescribeTargetHealth, DescribeTags) with the AWS
// SDK's default credential chain, and writes each target's changes of state,
// reason and description as results.Signal lines of kind
// results.SignalLBTargetHealth, source "aws-elbv2". Other platforms are out
// of scope.
//
// What target health cannot say: which target one connection went to. An
// NLB keeps no per-connection record a describe call returns, so the checks
// that need per-connection routing (a failed request pinned to a stopped
// target) are decided in the lab only (lab/lb's connection records).
package awslb
