// Package e2e runs the real edge binary and the real Node renderer, talking gRPC over a unix
// socket, and checks what HTTP clients get. `make test-e2e` builds what it needs first.
package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	repoRoot   string
	edgeBinary string
	nodeBinary string
	grpcurl    string
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		wd, _ := os.Getwd()
		repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
		nodeBinary = filepath.Join(repoRoot, "renderer", "node_modules", ".bin", "node")
		grpcurl = filepath.Join(repoRoot, "bin", "grpcurl")
		for _, need := range []string{nodeBinary, grpcurl, fixtureBundle(), filepath.Join(assetsDir(), "manifest.json")} {
			if _, err := os.Stat(need); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: %s is missing: run `make test-e2e` (it builds the app, the fixture bundle and installs the pinned Node)\n", need)
				return 1
			}
		}
		dir, err := os.MkdirTemp("", "sidecar-ssr-e2e-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		edgeBinary = filepath.Join(dir, "edge")
		build := exec.Command("go", "build", "-race", "-o", edgeBinary, "./cmd/edge")
		build.Dir = filepath.Join(repoRoot, "edge")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building the edge:", err)
			return 1
		}
		return m.Run()
	}())
}

// nodeFlags are the flags every launcher gives the renderer's node (renderer/node-flags.json).
func nodeFlags(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "renderer", "node-flags.json"))
	var flags []string
	if err == nil {
		err = json.Unmarshal(b, &flags)
	}
	if err != nil {
		t.Fatalf("renderer/node-flags.json: %v", err)
	}
	return flags
}

func fixtureBundle() string {
	return filepath.Join(repoRoot, "renderer", "test", "fixtures", "dist", "server.js")
}
func assetsDir() string { return filepath.Join(repoRoot, "app", "dist", "client") }

// process is a started binary whose JSON log lines are collected.
type process struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd

	mu    sync.Mutex
	lines []map[string]any
	raw   strings.Builder
	exit  chan struct{} // closed once the process has exited and cmd.ProcessState is set
}

func startProcess(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{t: t, name: name, cmd: cmd, exit: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line map[string]any
			json.Unmarshal(sc.Bytes(), &line)
			p.mu.Lock()
			p.raw.WriteString(sc.Text() + "\n")
			if line != nil {
				p.lines = append(p.lines, line)
			}
			p.mu.Unlock()
		}
		cmd.Wait()
		close(p.exit)
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.exit
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw.String()
}

// waitExit waits for the process to exit and returns its exit code.
func (p *process) waitExit(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exit:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		p.t.Fatalf("%s still running %s after being asked to stop:\n%s", p.name, timeout, p.output())
		return -1
	}
}

func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.exit:
	default:
		p.cmd.Process.Signal(sig)
	}
}

// waitLog waits for a log line whose fields include all of want and returns it.
func (p *process) waitLog(want map[string]string, timeout time.Duration) map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, line := range p.lines {
			match := true
			for k, v := range want {
				if fmt.Sprint(line[k]) != v {
					match = false
					break
				}
			}
			if match {
				p.mu.Unlock()
				return line
			}
		}
		p.mu.Unlock()
		select {
		case <-p.exit:
			p.t.Fatalf("%s exited while waiting for log %v:\n%s", p.name, want, p.output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.t.Fatalf("%s: no log line %v within %s:\n%s", p.name, want, timeout, p.output())
	return nil
}

func (p *process) address(listener string) string {
	return fmt.Sprint(p.waitLog(map[string]string{"msg": "listening", "listener": listener}, 30*time.Second)["address"])
}

// httpURL is path on the process's HTTP listener (the renderer's /metrics, /readyz).
func (p *process) httpURL(path string) string { return "http://" + p.address("http") + path }

// waitUntil polls cond until it holds; past timeout the test fails, saying what it waited for.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRenderer starts the renderer on the fixture bundle, listening on socket, and waits
// until every worker has loaded the bundle. Its HTTP address is process.address("http").
func startRenderer(t *testing.T, socket string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(nodeBinary, append(nodeFlags(t), filepath.Join(repoRoot, "renderer", "src", "main.js"))...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(),
		"SSR_RENDERER_GRPC_ADDRESS=unix://"+socket,
		"SSR_RENDERER_HTTP_LISTEN=127.0.0.1:0",
		"SSR_RENDERER_BUNDLE="+fixtureBundle(),
		"SSR_RENDERER_THREADS=2",
	)
	cmd.Env = append(cmd.Env, env...)
	p := startProcess(t, "renderer", cmd)
	p.waitLog(map[string]string{"msg": "ready"}, 60*time.Second)
	return p
}

// edgeConfig routes the demo pages and the fixture's misbehaving pages; only the /cached/
// routes are cached (with short windows, so tests can walk through them in real time).
const edgeConfig = `
edge:
  routes:
    - {pattern: "GET /{$}", page: home}
    - {pattern: "GET /products/{id}", page: product}
    - {pattern: "GET /throws", page: throws}
    - {pattern: "GET /sleep", page: sleep}
    - {pattern: "GET /xss", page: xss}
    - {pattern: "GET /redirect", page: redirect}
    - {pattern: "GET /slow", page: sleep, render_timeout: 3s, hard_timeout: 4s}
    - {pattern: "GET /oom", page: oom, render_timeout: 4s, hard_timeout: 5s}
    - pattern: "GET /cached/products/{id}"
      page: product
      cache: {ttl: 1s, stale_while_revalidate: 1s, stale_if_error: 3s}
    - pattern: "GET /cached/slow"
      page: sleep
      cache: {ttl: 60s}
    - pattern: "GET /cached/cookie"
      page: cookie
      render_timeout: 5s
      hard_timeout: 6s
      cache: {ttl: 60s}
    - pattern: "GET /cached/flaky"
      page: flaky
      cache: {ttl: 1s, stale_if_error: 1m}
    - {pattern: "GET /items/{id}", page: item, cache: {ttl: 60s}}
    - {pattern: "GET /items/{id}/reviews", page: reviews, cache: {ttl: 60s}}
    - {pattern: "GET /loops", page: loops, render_timeout: 100ms, hard_timeout: 600ms}
`

// startStack starts the renderer (with rendererEnv) on a socket of its own and an edge in
// front of it.
func startStack(t *testing.T, rendererEnv ...string) (*process, *edgeProcess) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket, rendererEnv...)
	return renderer, startEdge(t, socket)
}

type edgeProcess struct {
	*process
	url, admin string
}

func startEdge(t *testing.T, socket string, env ...string) *edgeProcess {
	t.Helper()
	config := filepath.Join(t.TempDir(), "ssr.yaml")
	if err := os.WriteFile(config, []byte(edgeConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(edgeBinary, "--config", config)
	cmd.Env = append(os.Environ(),
		"SSR_EDGE_LISTEN=127.0.0.1:0",
		"SSR_EDGE_ADMIN_LISTEN=127.0.0.1:0",
		"SSR_EDGE_ASSETS_DIR="+assetsDir(),
		"SSR_RENDERER_GRPC_ADDRESS=unix://"+socket,
	)
	cmd.Env = append(cmd.Env, env...)
	p := startProcess(t, "edge", cmd)
	return &edgeProcess{process: p, url: "http://" + p.address("public"), admin: "http://" + p.address("admin")}
}

type response struct {
	*http.Response
	body string
	took time.Duration
}

var noRedirects = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func get(t *testing.T, url string) response {
	t.Helper()
	began := time.Now()
	resp, err := noRedirects.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp, string(body), time.Since(began)}
}
