package server

import (
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// TestPropsCrossOnce: the document embeds the props the renderer sent back, else the ones
// the request sent, escaped for the script element, by the renderer's cases
// (renderer/test/props-crossing.test.js says what it sends back).
func TestPropsCrossOnce(t *testing.T) {
	var file struct {
		Cases []struct {
			Name                        string
			JSOnly                      bool
			Request, Response, Embedded string
		}
	}
	readSharedCases(t, "props-crossing.json", &file)
	shell := document.NewShell(&document.Manifest{})
	for _, c := range file.Cases {
		if c.JSOnly {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			req := &ssrv1.RenderRequest{Page: "p", Url: "/", PropsJson: []byte(c.Request)}
			resp := &ssrv1.RenderResponse{Html: []byte("<p>x</p>"), PropsJson: []byte(c.Response)}
			resp.PropsJson = renderedProps(req, resp)
			doc := string(shell.Append(nil, (&page{}).documentPage(req, resp, nil)))
			if want := `"props":` + c.Embedded + "}</script>"; !strings.Contains(doc, want) {
				t.Errorf("the document does not end its data with %s:\n%s", want, doc)
			}
		})
	}
}
