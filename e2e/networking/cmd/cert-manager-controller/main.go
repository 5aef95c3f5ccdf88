// Command cert-manager-controller runs cert-manager's own controllers for SelfSigned and CA issuers against a
// Kubernetes API server, for the end-to-end tests and the sandbox.
//
// cert-manager publishes its controllers as packages of its root module, but not the `main` that starts them
// (cmd/controller is a separate module the Go module proxy cannot serve). This file is the project's small
// replacement for that main: it builds cert-manager's controller context from a kubeconfig, constructs the
// controllers a SelfSigned/CA issuance needs from cert-manager's registry, starts the informers and runs them until
// SIGINT or SIGTERM. It sets the defaults upstream's options would set. There is no leader election, webhook,
// metrics or ACME: one instance runs per test control plane, and the CRDs are applied without the webhook.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Controllers register themselves with cert-manager's registry when imported.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// Issuer back-ends the issuers controllers set up (Ready conditions of Issuers and ClusterIssuers).
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The controllers a SelfSigned or CA issuance needs, by the names cert-manager registers them under.
var defaultControllers = []string{
	"issuers",
	"clusterissuers",
	"certificaterequests-approver",
	"certificaterequests-issuer-selfsigned",
	"certificaterequests-issuer-ca",
	"certificates-trigger",
	"certificates-issuing",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-readiness",
	"certificates-revision-manager",
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to run against")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace holding the Secrets that ClusterIssuers refer to (a CA ClusterIssuer's key pair)")
	controllers := flag.String("controllers", strings.Join(defaultControllers, ","), "comma-separated controllers to run")
	workers := flag.Int("workers", 5, "workers per controller")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *clusterResourceNamespace, strings.Split(*controllers, ","), *workers); err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager-controller: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterResourceNamespace string, names []string, workers int) error {
	if kubeconfig == "" {
		return errors.New("no kubeconfig: pass --kubeconfig or set KUBECONFIG")
	}
	ctx = logf.NewContext(ctx, logf.Log, "cert-manager-controller")
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace:        clusterResourceNamespace,
			ClusterIssuerAmbientCredentials: true,
		},
		CertificateOptions: controllerpkg.CertificateOptions{
			CopiedAnnotationPrefixes: []string{
				"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/",
			},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		IngressShimOptions: controllerpkg.IngressShimOptions{DefaultIssuerKind: "Issuer", DefaultIssuerGroup: "cert-manager.io"},
		SchedulerOptions:   controllerpkg.SchedulerOptions{MaxConcurrentChallenges: 60},
	})
	if err != nil {
		return fmt.Errorf("building cert-manager's controller context: %w", err)
	}

	known := controllerpkg.Known()
	built := make(map[string]controllerpkg.Interface, len(names))
	for _, name := range names {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("unknown controller %q (known: %s)", name, strings.Join(sortedKeys(known), ", "))
		}
		controller, err := construct(factory)
		if err != nil {
			return fmt.Errorf("constructing controller %q: %w", name, err)
		}
		built[name] = controller
	}

	// Constructing the controllers registered their informers with the shared factories; start those now.
	shared, err := factory.Build()
	if err != nil {
		return fmt.Errorf("building the informers' context: %w", err)
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	var wg sync.WaitGroup
	errs := make(chan error, len(built))
	for name, controller := range built {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := controller.Run(workers, ctx); err != nil {
				errs <- fmt.Errorf("controller %q: %w", name, err)
			}
		}()
	}
	klog.Infof("cert-manager-controller: running %d controllers: %s", len(built), strings.Join(names, ","))
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func sortedKeys(m map[string]controllerpkg.Constructor) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func collect(errs <-chan error) []error {
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return all
}
