package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// TestRunScript drives scripts/run.sh (make run, make dev) as a developer does. When the
// renderer dies, the shop goes on with pages the browser renders, run.sh restarts the
// renderer and server rendering comes back. SIGHUP moves the renderer's workers to the
// bundle file as it is now, the shop links a client build written over its manifest and
// still serves the previous build's files. Ctrl-C stops every process.
func TestRunScript(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "server.js")
	copyFile(t, filepath.Join(repoRoot, "app", "dist", "server", "server.js"), bundle)
	assets := filepath.Join(dir, "client")
	built := filepath.Join(repoRoot, "app", "dist", "client")
	var manifest struct {
		BuildID string `json:"buildId"`
		Scripts []string
	}
	copyFile(t, filepath.Join(built, "manifest.json"), filepath.Join(assets, "manifest.json"))
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(assets, "manifest.json"))), &manifest); err != nil || len(manifest.Scripts) == 0 {
		t.Fatalf("the client build's manifest: %v", err)
	}
	oldScript := manifest.Scripts[0]
	copyFile(t, filepath.Join(built, oldScript), filepath.Join(assets, oldScript))
	// Started as under nohup, SIGHUP ignored: bash cannot trap it then, and run.sh starts
	// again with its default disposition so that the reload below reaches the renderer.
	run, shop := runScriptWith(t, repoRoot, []string{"SSR_RENDERER_BUNDLE=" + bundle}, []string{"nohup"}, "-assets", assets)
	if p := get(t, shop+"/products/1"); p.status != 200 || !p.hasHTML || p.header.Get("X-SSR-Fallback") != "" {
		t.Fatalf("GET /products/1: %d, fallback %q, server markup %v", p.status, p.header.Get("X-SSR-Fallback"), p.hasHTML)
	}

	ready := func(l map[string]any) bool { return l["msg"] == "ready" }
	first := int(run.WaitJSON("the renderer's ready line", ready)["pid"].(float64))
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitText(t, run, "run.sh: the renderer exited (status 137): restarting it in")
	if p := get(t, shop+"/products/2"); p.status != 200 || p.hasHTML || p.header.Get("X-SSR-Fallback") == "" || len(p.props) == 0 {
		t.Fatalf("GET /products/2 with the renderer down: %d, fallback %q, server markup %v, props %s; want the page for the browser to render",
			p.status, p.header.Get("X-SSR-Fallback"), p.hasHTML, p.props)
	}
	waitText(t, run, "run.sh: renderer restarted (pid ")
	run.WaitJSON("the restarted renderer's ready line", func(l map[string]any) bool {
		return ready(l) && int(l["pid"].(float64)) != first
	})
	rendered, _ := freshProducts(t, shop)
	harness.WaitUntil(t, "server rendering after the restart", func() bool { return rendered("Add to cart") })
	// A partially prerendered page's stored shell, made by this bundle.
	if p := get(t, shop+"/products/3/reviews"); !strings.Contains(p.body, "Add to cart") || !strings.Contains(p.header.Get("Cache-Status"), "detail=resumed") {
		t.Fatalf("GET /products/3/reviews: Cache-Status %q, want a resumed prelude of the running bundle", p.header.Get("Cache-Status"))
	}

	// A rebuild: the new bundle names the new client build it goes with, as
	// sidecar-ssr-build's does, and the pages link it once the renderer runs it.
	rebuilt := strings.Replace(readFile(t, bundle), `children: "Add to cart"`, `children: "Add to basket"`, 1)
	stamp := `export const clientBuildId = "` + manifest.BuildID + `";`
	if !strings.Contains(rebuilt, stamp) {
		t.Fatalf("the bundle does not name its client build (%s)", stamp)
	}
	publish(t, bundle, strings.Replace(rebuilt, stamp, `export const clientBuildId = "newbuild";`, 1))
	newScript := "/assets/client-NEWBUILD.js"
	copyFile(t, filepath.Join(built, oldScript), filepath.Join(assets, newScript))
	publish(t, filepath.Join(assets, "manifest.json"), `{"buildId":"newbuild","scripts":["`+newScript+`"],"styles":[]}`)
	if err := run.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	run.WaitJSON("the renderer's reload", func(l map[string]any) bool { return l["msg"] == "reloaded: every worker runs the bundle" })
	if !rendered("Add to basket") {
		t.Error("after the reload, a product page does not come from the new bundle")
	}
	// The shell stored before the reload was made by the old bundle: not served, nor
	// resumed by the new one.
	if p := get(t, shop+"/products/3/reviews"); !strings.Contains(p.body, "Add to basket") || strings.Contains(p.body, "Add to cart") {
		t.Errorf("after the reload, the partially prerendered page's shell is the old bundle's (Cache-Status %q)", p.header.Get("Cache-Status"))
	}
	harness.WaitUntil(t, "pages linking the new client build", func() bool { return rendered(`src="` + newScript + `"`) })
	if p := get(t, shop+oldScript); p.status != 200 {
		t.Errorf("GET %s, the previous build's script: %d", oldScript, p.status)
	}

	if err := syscall.Kill(-run.Cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := run.WaitExit(30 * time.Second); code != 130 {
		t.Errorf("run.sh exited %d after Ctrl-C, want 130", code)
	}
	if err := syscall.Kill(-run.Cmd.Process.Pid, 0); err != syscall.ESRCH {
		t.Errorf("processes of run.sh are left after Ctrl-C (kill -0: %v)", err)
	}
}

// TestRunScriptDev is make dev (run.sh --dev) on a copy of the app: an edit under app/src
// shows on the next page, a build that fails leaves the running version serving, and the
// fix shows in turn.
func TestRunScriptDev(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"src", "dist/server", "dist/client"} {
		if err := os.CopyFS(filepath.Join(root, "app", dir), os.DirFS(filepath.Join(repoRoot, "app", dir))); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, filepath.Join(repoRoot, "app", "build.mjs"), filepath.Join(root, "app", "build.mjs"))
	copyFile(t, filepath.Join(repoRoot, "scripts", "run.sh"), filepath.Join(root, "scripts", "run.sh"))
	if err := os.Chmod(filepath.Join(root, "scripts", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"app/node_modules", "renderer", "bin/shop"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755)
		if err := os.Symlink(filepath.Join(repoRoot, link), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	run, shop := runScript(t, root, nil, "--dev")
	waitText(t, run, "watching app/src")
	rendered, next := freshProducts(t, shop)
	harness.WaitUntil(t, "a server-rendered page", func() bool { return rendered("Add to cart") })

	card := filepath.Join(root, "app", "src", "components", "ProductCard.jsx")
	source := readFile(t, card)
	edit := func(from, to string) {
		t.Helper()
		if !strings.Contains(source, from) {
			t.Fatalf("%s does not say %q", card, from)
		}
		source = strings.Replace(source, from, to, 1)
		publish(t, card, source)
	}
	edit("Add to cart", "Add to basket")
	harness.WaitUntil(t, "the edit on a server-rendered page", func() bool { return rendered("Add to basket") })
	script := regexp.MustCompile(`src="(/assets/client-[^"]+\.js)"`)
	first := script.FindStringSubmatch(next().body)
	if first == nil {
		t.Fatal("a product page links no client script")
	}

	edit("Add to basket", "Add to basket{")
	waitText(t, run, "app build failed")
	if !rendered("Add to basket") {
		t.Error("after a build that failed, the page is not the last good version's")
	}
	edit("Add to basket{", "Add to bag")
	harness.WaitUntil(t, "the fix on a server-rendered page", func() bool { return rendered("Add to bag") })
	harness.WaitUntil(t, "a page linking the fix's client build", func() bool {
		last := script.FindStringSubmatch(next().body)
		return last != nil && last[1] != first[1]
	})
	if p := get(t, shop+first[1]); p.status != 200 {
		t.Errorf("GET %s, an earlier build's script: %d", first[1], p.status)
	}
}

// runScript starts root/scripts/run.sh with args (the shop's, after --dev), the renderer and
// the shop on a socket, ports and database of their own, and env added to the environment.
// It returns run.sh's output and the shop's URL.
func runScript(t *testing.T, root string, env []string, args ...string) (*harness.Process, string) {
	t.Helper()
	return runScriptWith(t, root, env, nil, args...)
}

// runScriptWith is runScript started through launcher (a command and its arguments, run.sh
// and its arguments after them), e.g. nohup.
func runScriptWith(t *testing.T, root string, env, launcher []string, args ...string) (*harness.Process, string) {
	t.Helper()
	if err := harness.Check(filepath.Join(root, "bin", "shop")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args = append(args, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-db", filepath.Join(dir, "shop.db"),
		// A slow runner must not turn these tests of processes into tests of deadlines.
		"-render-timeout", "2s")
	argv := append(append(slices.Clone(launcher), filepath.Join(root, "scripts", "run.sh")), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "SSR_RENDERER_GRPC_ADDRESS=unix://"+filepath.Join(dir, "renderer.sock"),
		fmt.Sprintf("SSR_RENDERER_HTTP_LISTEN=127.0.0.1:%d", harness.FreePort(t)), "SSR_RENDERER_THREADS=2", "SSR_RENDERER_WARMUP_ROUNDS=1"), env...)
	// Its own process group, as a terminal gives it: Ctrl-C signals the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	run := harness.Start(t, "run.sh", cmd)
	listening := run.WaitJSON("the shop's public listener", func(l map[string]any) bool {
		return l["msg"] == "listening" && l["listener"] == "public"
	})
	return run, "http://" + listening["address"].(string)
}

// freshProducts returns a check that the next product page, one never asked for before (so
// not in the shop's cache), is server-rendered and contains want; and the page itself.
func freshProducts(t *testing.T, shop string) (rendered func(want string) bool, next func() page) {
	id := 100
	next = func() page {
		id++
		return get(t, fmt.Sprintf("%s/products/%d", shop, id))
	}
	rendered = func(want string) bool {
		p := next()
		return p.status == 200 && p.hasHTML && strings.Contains(p.body, want)
	}
	return rendered, next
}

// waitText waits for a line run.sh prints itself (text, not JSON) that starts with prefix.
func waitText(t *testing.T, run *harness.Process, prefix string) {
	t.Helper()
	run.WaitLine(fmt.Sprintf("line %q", prefix), func(line string) bool { return strings.HasPrefix(line, prefix) })
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	publish(t, to, readFile(t, from))
}

// publish replaces the file at once, as the app's build does.
func publish(t *testing.T, path, contents string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}
