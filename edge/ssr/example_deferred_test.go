package ssr_test

import (
	"context"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// Review is one review, as a slower service than the database gives it.
type Review struct {
	Author string `json:"author"`
	Text   string `json:"text"`
}

// reviewsOf stands for that service.
func reviewsOf(ctx context.Context, id int) ([]Review, error) {
	select {
	case <-time.After(300 * time.Millisecond):
		return []Review{{Author: "Ada", Text: "Arrived early."}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A product page whose reviews come from a slow service: the page, with its props, goes out
// in the shell at once; the reviews follow in the same response, in the Suspense
// boundary where the page's component reads `use(deferred.reviews)`. If the service fails
// or is late, only that boundary shows the page's error UI.
func ExampleDeferred() {
	pages, err := ssr.New(ssr.Options{})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("GET /products/{id}/reviews", pages.Page("product-reviews", ssr.PageOptions{
		Stream: true,
		Cache:  ssr.CachePolicy{TTL: 5 * time.Minute, Query: []string{}},
		Load: func(r *http.Request) (ssr.Result, error) {
			id, err := strconv.Atoi(r.PathValue("id"))
			if err != nil {
				return ssr.Result{NotFound: true}, nil
			}
			return ssr.Result{
				Props: map[string]int{"id": id},
				Deferred: map[string]ssr.Deferred{
					// A plain function: its value reaches the page as ssr.Defer's would, but
					// untyped (ExampleDefer).
					"reviews": func(ctx context.Context) (any, error) { return reviewsOf(ctx, id) },
				},
			}, nil
		},
	}))
}

// ReviewsPage is the reviews page's props.
type ReviewsPage struct {
	ID int `json:"id"`
}

// A typed page whose reviews are typed too: `go tool ssr-types` writes, besides PageProps,
//
//	export interface PageDeferred {
//	  "product-reviews": {
//	    reviews: Review[];
//	  };
//	}
//
// and PageComponentProps<"product-reviews">, the page's props with
// `deferred: { reviews: Promise<Review[]> }`, which its component declares, so that
// `use(deferred.reviews)` is a Review[] to the app's typecheck. ssr-types sees the values
// of a map[string]ssr.Deferred literal written inside the Typed loader, with constant names.
func ExampleDefer() {
	pages, err := ssr.New(ssr.Options{})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("GET /products/{id}/reviews", pages.Page("product-reviews", ssr.PageOptions{
		Stream: true,
		Cache:  ssr.CachePolicy{TTL: 5 * time.Minute, Query: []string{}},
		Load: ssr.Typed(func(r *http.Request) (ReviewsPage, ssr.Result, error) {
			id, err := strconv.Atoi(r.PathValue("id"))
			if err != nil {
				return ReviewsPage{}, ssr.Result{NotFound: true}, nil
			}
			return ReviewsPage{ID: id}, ssr.Result{Deferred: map[string]ssr.Deferred{
				"reviews": ssr.Defer(func(ctx context.Context) ([]Review, error) { return reviewsOf(ctx, id) }),
			}}, nil
		}),
	}))
}
