package manifests

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// kubeletVar is a reference to an env var in a container's args, which the kubelet expands.
var kubeletVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// sharedCacheSecret is the Secret the component reads the store's password and address from.
const sharedCacheSecret = "sidecar-ssr-shared-cache"

// secretRefs are the Secrets a container reads, from env and envFrom.
type secretRefs struct {
	Name string
	Env  []struct {
		Name      string
		ValueFrom *struct {
			SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	EnvFrom []struct {
		SecretRef *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
}

// reads reports whether c reads secret, in any way a container can.
func (c secretRefs) reads(secret string) bool {
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secret {
			return true
		}
	}
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil && e.SecretRef.Name == secret {
			return true
		}
	}
	return false
}

// envFromSecret is the Secret key env var name of c comes from, or empty strings.
func (c secretRefs) envFromSecret(name string) (secret, key string) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key
		}
	}
	return "", ""
}

// TestSharedCacheComponent holds the shared-cache component together: the edge container, and
// no other, reads the store's address from the component's Secret; the address its comment
// tells operators to put there names the Valkey Service, a port of it that reaches Valkey,
// and Valkey's user for the edge; only the edge's pods may reach that port, and Valkey reaches
// nothing; Valkey's maxmemory plus its overhead fits its memory limit.
func TestSharedCacheComponent(t *testing.T) {
	r := renderWith(t, "prod", "shared-cache")
	type workload struct {
		Metadata struct{ Name string }
		Spec     struct {
			Template struct {
				Metadata struct{ Labels map[string]string }
				Spec     podSpec
			}
		}
	}
	type secretsOfPod struct {
		Spec struct {
			Template struct {
				Spec struct {
					ShareProcessNamespace *bool        `yaml:"shareProcessNamespace"`
					InitContainers        []secretRefs `yaml:"initContainers"`
					Containers            []secretRefs `yaml:"containers"`
					Volumes               []map[string]any
				}
			}
		}
	}
	workloads := map[string]workload{}
	secrets := map[string]secretsOfPod{}
	for _, o := range r.find(t, "Deployment") {
		var w workload
		var s secretsOfPod
		if err := o.raw.Decode(&w); err != nil {
			t.Fatal(err)
		}
		if err := o.raw.Decode(&s); err != nil {
			t.Fatal(err)
		}
		workloads[o.Metadata.Name], secrets[o.Metadata.Name] = w, s
	}
	edgePod, valkey := workloads["sidecar-ssr"], workloads["sidecar-ssr-valkey"]

	// The edge container reads the address from the Secret; the renderer, running the app's
	// code in the same pod, gets nothing of it, nor can it read the edge's environment.
	pod := secrets["sidecar-ssr"].Spec.Template.Spec
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if c.Name == "edge" {
			if secret, key := c.envFromSecret("SSR_EDGE_SHARED_CACHE_ADDRESS"); secret != sharedCacheSecret || key != "address" {
				t.Errorf("edge: SSR_EDGE_SHARED_CACHE_ADDRESS from Secret %q key %q, want %s key address", secret, key, sharedCacheSecret)
			}
			continue
		}
		if c.reads(sharedCacheSecret) {
			t.Errorf("container %s reads the Secret %s: only the edge may have the store's password", c.Name, sharedCacheSecret)
		}
	}
	for _, v := range pod.Volumes {
		if b, _ := yaml.Marshal(v); strings.Contains(string(b), sharedCacheSecret) {
			t.Errorf("volume %v holds the Secret %s, which any container of the pod may mount", v["name"], sharedCacheSecret)
		}
	}
	if p := pod.ShareProcessNamespace; p != nil && *p {
		t.Error("shareProcessNamespace: the renderer would read the edge's environment, the store's password in it")
	}

	// The address operators are told to store names the Service, its port and the edge's user.
	component, err := os.ReadFile(filepath.Join(harness.RepoRoot, "deploy", "k8s", "components", "shared-cache", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--from-literal=address=redis://([a-z0-9-]+):\$pw@([a-z0-9-]+):([0-9]+)/[0-9]+`).FindStringSubmatch(string(component))
	if m == nil {
		t.Fatalf("the component's comment gives no address as redis://USER:$pw@SERVICE:PORT/DB")
	}
	user, host, servicePort := m[1], m[2], m[3]
	var port int
	for _, o := range r.find(t, "Service") {
		if o.Metadata.Name != host {
			continue
		}
		var svc service
		o.raw.Decode(&svc)
		for k, v := range svc.Spec.Selector {
			if valkey.Spec.Template.Metadata.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the Valkey pods do not carry", host, k, v)
			}
		}
		for _, p := range svc.Spec.Ports {
			if strconv.Itoa(p.Port) == servicePort {
				port, _ = resolvePort(p.TargetPort, valkey.Spec.Template.Spec.Containers...)
			}
		}
	}
	if port == 0 {
		t.Fatalf("the address %s:%s names no Service port of the render that reaches a Valkey container port", host, servicePort)
	}
	if args := valkey.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, user) {
		t.Errorf("the address's user %q is no user of Valkey's args %q", user, args)
	}

	var allowed bool
	for _, o := range r.find(t, "NetworkPolicy") {
		var np struct {
			Spec struct {
				PodSelector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"podSelector"`
				PolicyTypes []string `yaml:"policyTypes"`
				Ingress     []struct {
					From []struct {
						PodSelector *struct {
							MatchLabels map[string]string `yaml:"matchLabels"`
						} `yaml:"podSelector"`
					}
					Ports []struct{ Port any }
				}
				Egress []any
			}
		}
		o.raw.Decode(&np)
		if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != valkey.Spec.Template.Metadata.Labels["app.kubernetes.io/name"] {
			continue
		}
		if !slices.Contains(np.Spec.PolicyTypes, "Egress") || len(np.Spec.Egress) > 0 {
			t.Errorf("NetworkPolicy %s: policyTypes %v, egress %v; want Valkey to reach nothing", o.Metadata.Name, np.Spec.PolicyTypes, np.Spec.Egress)
		}
		for _, in := range np.Spec.Ingress {
			for _, from := range in.From {
				if from.PodSelector == nil || len(from.PodSelector.MatchLabels) == 0 {
					t.Errorf("NetworkPolicy %s: a rule admits more than the edge's pods", o.Metadata.Name)
					continue
				}
				for k, v := range from.PodSelector.MatchLabels {
					if edgePod.Spec.Template.Metadata.Labels[k] != v {
						t.Errorf("NetworkPolicy %s admits %s=%s, which the edge's pods do not carry", o.Metadata.Name, k, v)
					}
				}
				allowed = true
			}
		}
	}
	if !allowed {
		t.Error("no NetworkPolicy admits the edge's pods to Valkey (and only them)")
	}
	c := valkey.Spec.Template.Spec.Containers[0]
	i := slices.Index(c.Args, "--maxmemory")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("valkey: no --maxmemory in %q", c.Args)
	}
	maxMB, err := mebibytes(strings.TrimSuffix(c.Args[i+1], "mb") + "M")
	limit, err2 := mebibytes(c.Resources.Limits["memory"])
	if err != nil || err2 != nil || maxMB+64 > limit {
		t.Errorf("valkey: maxmemory %s + 64 MiB overhead over its memory limit %s", c.Args[i+1], c.Resources.Limits["memory"])
	}

	t.Run("valkey users", func(t *testing.T) {
		playValkeyUsers(t, secrets["sidecar-ssr-valkey"].Spec.Template.Spec.Containers[0], c.Args, user)
	})
}

// playValkeyUsers runs a real redis-server with Valkey's args, its password from the
// component's Secret put in place as the kubelet does, and checks that the edge's user can do
// every call the edge makes (the shared cache's own code, authenticated values included), and
// that nobody else can do anything: no password, no admin command, no key outside the edge's.
func playValkeyUsers(t *testing.T, env secretRefs, args []string, user string) {
	const password = "0123456789abcdef0123456789abcdef"
	var played []string
	for _, a := range args {
		a = kubeletVar.ReplaceAllStringFunc(a, func(ref string) string {
			name := kubeletVar.FindStringSubmatch(ref)[1]
			if secret, key := env.envFromSecret(name); secret != sharedCacheSecret || key != "password" {
				t.Fatalf("valkey: $(%s) from Secret %q key %q, want %s key password", name, secret, key, sharedCacheSecret)
			}
			return password
		})
		played = append(played, a)
	}
	socket, _ := redistest.StartStoppable(t, played...)
	path := strings.TrimPrefix(socket, "unix://")
	ctx := context.Background()

	for _, key := range [][]byte{nil, []byte(password)} {
		address := "unix://" + user + ":" + password + "@" + path
		replica := func() *sharedcache.Store {
			s, err := sharedcache.New(sharedcache.Options{Address: address, Timeout: 2 * time.Second, HMACKey: key})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		store, other := replica(), replica() // the other hears this one's purges
		heard := make(chan sharedcache.Purge, 1)
		subscribed, cancel := context.WithCancel(ctx)
		defer cancel()
		before := redistest.Subscribers(t, address, "ssr:purges")
		go other.Subscribe(subscribed, func(p sharedcache.Purge) { heard <- p })
		redistest.Subscribed(t, address, "ssr:purges", before+1)

		doc := &htmlcache.Entry{Key: "b1 GET /{$} /", Path: "/", Tags: []string{"home"}, Status: 200,
			Bodies: map[string][]byte{"": []byte("<p>home</p>")}, Stored: time.Now(), TTL: time.Minute}
		if err := store.Set(ctx, doc); err != nil {
			t.Fatalf("Set as %s: %v", user, err)
		}
		if e, err := store.Get(ctx, doc.Key); e == nil || err != nil {
			t.Fatalf("Get as %s: %v, %v", user, e, err)
		}
		unlock, ok, err := store.Lock(ctx, doc.Key)
		if !ok || err != nil {
			t.Fatalf("Lock as %s: %v, %v", user, ok, err)
		}
		unlock()
		unlock, ok, err = store.Lock(ctx, doc.Key)
		if !ok || err != nil {
			t.Fatalf("Lock after unlock as %s: %v, %v (the release script did not run)", user, ok, err)
		}
		unlock()
		if err := store.PutAsset(ctx, "client-ABCDEFGH.js", []byte("x"), time.Minute); err != nil {
			t.Fatalf("PutAsset as %s: %v", user, err)
		}
		if body, err := store.Asset(ctx, "client-ABCDEFGH.js"); string(body) != "x" || err != nil {
			t.Fatalf("Asset as %s: %q, %v", user, body, err)
		}
		for _, kind := range []string{"key", "path", "prefix", "tag"} {
			value := map[string]string{"key": doc.Key, "path": "/", "prefix": "/", "tag": "home"}[kind]
			if _, err := store.Purge(ctx, sharedcache.Purge{Kind: kind, Value: value}); err != nil {
				t.Fatalf("Purge by %s as %s: %v", kind, user, err)
			}
			select {
			case <-heard:
			case <-time.After(2 * time.Second):
				t.Fatalf("the purge by %s as %s was not heard", kind, user)
			}
		}
	}

	for _, tc := range []struct {
		who      string
		user, pw string
		cmd      []any
	}{
		{"no password", "", "", []any{"GET", "ssr:doc:x"}},
		{"the default user", "default", password, []any{"GET", "ssr:doc:x"}},
		{"the edge's user, an admin command", user, password, []any{"CONFIG", "GET", "maxmemory"}},
		{"the edge's user, FLUSHALL", user, password, []any{"FLUSHALL"}},
		{"the edge's user, KEYS", user, password, []any{"KEYS", "*"}},
		{"the edge's user, a key not its own", user, password, []any{"SET", "other", "x"}},
	} {
		client := redis.NewClient(&redis.Options{Network: "unix", Addr: path, Username: tc.user, Password: tc.pw, MaxRetries: -1})
		err := client.Do(ctx, tc.cmd...).Err()
		client.Close()
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") && !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("%s: %v answered %v, want it refused", tc.who, tc.cmd, err)
		}
	}
}
