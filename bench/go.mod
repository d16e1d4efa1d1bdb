module github.com/sidecar-ssr/sidecar-ssr/bench

go 1.26
