// Package server is the lab's aggregated API server: one program in two
// roles, image.openshift.io (openshift-apiserver's imagestreams) and
// oauth.openshift.io (oauth-apiserver's oauthclients), built on
// k8s.io/apiserver as openshift/openshift-apiserver and
// openshift/oauth-apiserver are.
//
// It serves its one resource from etcd under its own prefix (/openshift.io,
// where OpenShift's API servers keep theirs), with discovery,
// OpenAPI v2 and v3, delegated authentication and authorization against the
// kube-apiserver (requestheader settings from
// kube-system/extension-apiserver-authentication), /readyz, graceful
// termination (--shutdown-delay-duration) and an audit log. The lab runs
// three replicas per role behind an APIService; the repro binary itself
// never links this package (lab/aggregated embeds its sources and builds it
// in a module of its own).
package server

import (
	"context"
	"fmt"
	"net"
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	oauthv1 "github.com/openshift/api/oauth/v1"
	"github.com/openshift/api/openapi/generated_openapi"
	"github.com/spf13/pflag"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Role is one of the two APIs the program can serve.
type Role struct {
	// Group is the API group, e.g. image.openshift.io.
	Group string
	// Resource is the plural resource name served under v1.
	Resource string
	// Singular is the singular resource name.
	Singular string
	// Namespaced says whether the resource lives in namespaces.
	Namespaced bool
	// Title names the OpenAPI document, as the real server's does.
	Title string
	// EtcdResource is the key folder under EtcdPrefix: OpenShift keeps
	// imagestreams at /openshift.io/imagestreams and oauthclients at
	// /openshift.io/oauth/clients (openshift/origin 3.x's storage overrides
	// map oauthclients to oauth/clients), without the group
	// k8s.io/apiserver would put in between.
	EtcdResource string

	newObj  func() runtime.Object
	newList func() runtime.Object
}

// Roles are the servable roles by group.
var Roles = map[string]Role{
	imagev1.GroupName: {
		Group: imagev1.GroupName, Resource: "imagestreams", Singular: "imagestream", Namespaced: true,
		EtcdResource: "imagestreams",
		Title:        "OpenShift API (image.openshift.io, repro lab)",
		newObj:       func() runtime.Object { return &imagev1.ImageStream{} },
		newList:      func() runtime.Object { return &imagev1.ImageStreamList{} },
	},
	oauthv1.GroupName: {
		Group: oauthv1.GroupName, Resource: "oauthclients", Singular: "oauthclient", Namespaced: false,
		EtcdResource: "oauth/clients",
		Title:        "OAuth API (oauth.openshift.io, repro lab)",
		newObj:       func() runtime.Object { return &oauthv1.OAuthClient{} },
		newList:      func() runtime.Object { return &oauthv1.OAuthClientList{} },
	},
}

// GroupNames lists the roles' groups for messages.
func GroupNames() []string { return []string{imagev1.GroupName, oauthv1.GroupName} }

// EtcdPrefix is where both roles keep their objects, as openshift-apiserver
// and oauth-apiserver do.
const EtcdPrefix = "/openshift.io"

// NewScheme registers the role's v1 kinds, and the same Go types again as
// the internal version k8s.io/apiserver converts through: between two
// registrations of one type the scheme's conversion only changes the kind's
// version (runtime.Scheme.convertToVersion, copyAndSetTargetKind), so no
// conversion functions are needed.
func NewScheme(r Role) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Group: r.Group, Version: "v1"}
	kind := kindOf(r.newObj())
	s.AddKnownTypeWithName(gv.WithKind(kind), r.newObj())
	s.AddKnownTypeWithName(gv.WithKind(kind+"List"), r.newList())
	metav1.AddToGroupVersion(s, gv)
	internal := schema.GroupVersion{Group: r.Group, Version: runtime.APIVersionInternal}
	s.AddKnownTypeWithName(internal.WithKind(kind), r.newObj())
	s.AddKnownTypeWithName(internal.WithKind(kind+"List"), r.newList())
	// The unversioned meta types every apiserver's scheme carries (as
	// k8s.io/sample-apiserver pkg/apiserver/apiserver.go registers them).
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Group: "", Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s, s.SetVersionPriority(gv)
}

func kindOf(o runtime.Object) string {
	switch o.(type) {
	case *imagev1.ImageStream:
		return "ImageStream"
	case *oauthv1.OAuthClient:
		return "OAuthClient"
	}
	panic(fmt.Sprintf("no kind for %T", o))
}

// openAPIDefinitions are openshift/api's generated definitions, which
// cover the metav1 types but not k8s.io/apimachinery/pkg/version.Info
// (/version's schema): those come from apiextensions-apiserver's generated
// set, which holds every apimachinery type, where openshift/api has none.
func openAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := generated_openapi.GetOpenAPIDefinitions(ref)
	for k, v := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[k]; !ok && strings.HasPrefix(k, "io.k8s.apimachinery.") {
			defs[k] = v
		}
	}
	return defs
}

// definitionNamer names OpenAPI definitions REST-style
// (com.github.openshift.api.image.v1.ImageStream), the names
// runtime.Scheme.ToOpenAPIDefinitionName gives and the namer's
// x-kubernetes-group-version-kind table is keyed by; openshift/api's
// generated definitions are keyed by Go path instead. Without the GVK
// extension server-side apply finds no schema for the kind.
func definitionNamer(n *openapinamer.DefinitionNamer) func(string) (string, spec.Extensions) {
	return func(name string) (string, spec.Extensions) {
		parts := strings.Split(name, "/")
		if len(parts) > 1 && strings.Contains(parts[0], ".") {
			dom := strings.Split(parts[0], ".")
			for i, j := 0, len(dom)-1; i < j; i, j = i+1, j-1 {
				dom[i], dom[j] = dom[j], dom[i]
			}
			parts[0] = strings.Join(dom, ".")
			name = strings.Join(parts, ".")
		}
		return n.GetDefinitionName(name)
	}
}

// Options are the program's flags: k8s.io/apiserver's recommended options
// for an aggregated server plus the server-run ones (shutdown delay).
type Options struct {
	Group       string
	Recommended *genericoptions.RecommendedOptions
	Run         *genericoptions.ServerRunOptions
}

// NewOptions returns the defaults for role group (which may still be
// changed by --group before Config).
func NewOptions() *Options {
	o := &Options{
		// The codec is set in Config once --group is known.
		Recommended: genericoptions.NewRecommendedOptions(EtcdPrefix, nil),
		Run:         genericoptions.NewServerRunOptions(),
	}
	return o
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Group, "group", "", "API group to serve: "+strings.Join(GroupNames(), " or "))
	o.Recommended.AddFlags(fs)
	o.Run.AddUniversalFlags(fs)
}

// Server is a configured, not yet running server.
type Server struct {
	Role    Role
	generic *genericapiserver.GenericAPIServer
}

// New validates the options and builds the server.
func New(o *Options) (*Server, error) {
	r, ok := Roles[o.Group]
	if !ok {
		return nil, fmt.Errorf("--group %q: want %s", o.Group, strings.Join(GroupNames(), " or "))
	}
	scheme, err := NewScheme(r)
	if err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme)
	gv := schema.GroupVersion{Group: r.Group, Version: "v1"}
	ro := o.Recommended
	// Without --kubeconfig there is no kube-apiserver to run informers and
	// admission against: the server then stands alone (its tests).
	if ro.CoreAPI != nil && ro.CoreAPI.CoreAPIKubeconfigPath == "" {
		ro.CoreAPI, ro.Admission = nil, nil
	}
	ro.Etcd.StorageConfig.Codec = codecs.LegacyCodec(gv)
	ro.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(gv, schema.GroupKind{Group: r.Group})
	// A dedicated FlowSchema set belongs to the kube-apiserver; this server,
	// like openshift-apiserver, admits everything the aggregator forwards.
	ro.Features.EnablePriorityAndFairness = false
	if err := o.Run.DefaultAdvertiseAddress(ro.SecureServing.SecureServingOptions); err != nil {
		return nil, err
	}
	var errs []error
	errs = append(errs, ro.Validate()...)
	errs = append(errs, o.Run.Validate()...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid options: %v", errs)
	}
	if err := ro.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, err
	}

	cfg := genericapiserver.NewRecommendedConfig(codecs)
	// OpenAPI names come from a scheme holding only the served v1 kinds, so
	// each definition's x-kubernetes-group-version-kind names v1 alone.
	v1only := runtime.NewScheme()
	v1only.AddKnownTypeWithName(gv.WithKind(kindOf(r.newObj())), r.newObj())
	v1only.AddKnownTypeWithName(gv.WithKind(kindOf(r.newObj())+"List"), r.newList())
	metav1.AddToGroupVersion(v1only, gv)
	base := openapinamer.NewDefinitionNamer(v1only)
	namer := definitionNamer(base)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openAPIDefinitions, base)
	cfg.OpenAPIConfig.GetDefinitionName = namer
	cfg.OpenAPIConfig.Info.Title = r.Title
	cfg.OpenAPIConfig.Info.Version = "v1"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openAPIDefinitions, base)
	cfg.OpenAPIV3Config.GetDefinitionName = namer
	// The v3 config resolves its references once, at construction: again
	// with the REST-style names.
	cfg.OpenAPIV3Config.Definitions = openAPIDefinitions(func(name string) spec.Ref {
		n, _ := namer(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(n))
	})
	cfg.OpenAPIV3Config.Info.Title = r.Title
	cfg.OpenAPIV3Config.Info.Version = "v1"
	if err := o.Run.ApplyTo(&cfg.Config); err != nil {
		return nil, err
	}
	if err := ro.ApplyTo(cfg); err != nil {
		return nil, err
	}
	gs, err := cfg.Complete().New(r.Group+"-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	if cfg.SharedInformerFactory != nil {
		inf := cfg.SharedInformerFactory
		gs.AddPostStartHookOrDie("start-informers", func(ctx genericapiserver.PostStartHookContext) error {
			inf.Start(ctx.Done())
			return nil
		})
	}

	st := strategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator, namespaced: r.Namespaced}
	gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}
	store := &genericregistry.Store{
		NewFunc:                   r.newObj,
		NewListFunc:               r.newList,
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: schema.GroupResource{Group: r.Group, Resource: r.Singular},
		CreateStrategy:            st,
		UpdateStrategy:            st,
		DeleteStrategy:            st,
		TableConvertor:            rest.NewDefaultTableConvertor(gr),
	}
	// Field selectors: metadata.name and metadata.namespace, the
	// generic registry's defaults.
	getter := prefixGetter{RESTOptionsGetter: cfg.RESTOptionsGetter, prefix: "/" + r.EtcdResource}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: getter}); err != nil {
		return nil, err
	}
	info := genericapiserver.NewDefaultAPIGroupInfo(r.Group, scheme, runtime.NewParameterCodec(scheme), codecs)
	info.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{r.Resource: store}
	if err := gs.InstallAPIGroup(&info); err != nil {
		return nil, err
	}
	return &Server{Role: r, generic: gs}, nil
}

// Run serves until ctx ends, then terminates gracefully: /readyz fails at
// once, requests are served for --shutdown-delay-duration, then in-flight
// requests drain.
func (s *Server) Run(ctx context.Context) error {
	return s.generic.PrepareRun().RunWithContext(ctx)
}

// prefixGetter puts the resource's keys where OpenShift keeps them.
type prefixGetter struct {
	generic.RESTOptionsGetter
	prefix string
}

func (g prefixGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	o, err := g.RESTOptionsGetter.GetRESTOptions(gr, example)
	o.ResourcePrefix = g.prefix
	return o, err
}

// strategy is the resources' create/update/delete policy: no validation
// beyond the generic registry's (names, namespaces, resourceVersion), as
// the lab's objects are never read by a controller.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	namespaced bool
}

func (s strategy) NamespaceScoped() bool                                          { return s.namespaced }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (strategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string {
	return nil
}
func (strategy) Canonicalize(runtime.Object)    {}
func (strategy) AllowCreateOnUpdate() bool      { return false }
func (strategy) AllowUnconditionalUpdate() bool { return true }
func (strategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}
func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
