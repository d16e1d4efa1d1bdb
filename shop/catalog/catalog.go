// Package catalog is the demo shop's catalog: generated once from a seeded PRNG into a
// SQLite database (a pure-Go driver: no cgo), read by the shop's handlers and by the bench
// contenders that do the same data work.
package catalog

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The catalog is the one the demo app computes for itself when it runs without a Go server
// (app/src/catalog.js, reviews.js): TestCatalogMatchesTheApp holds the two equal.

// The catalog's ids, and its listing pages.
const (
	MinID    = 1
	MaxID    = 1000
	PageSize = 100
)

// PageCount is the number of listing pages.
const PageCount = (MaxID - MinID + PageSize) / PageSize

// ListingProps are the listing page's props. Its TypeScript type (app/src/props.gen.d.ts) is
// generated from this one by make types, so a change here fails make test where a page
// disagrees.
type ListingProps struct {
	Page      int       `json:"page"`
	PageCount int       `json:"pageCount"`
	Products  []Product `json:"products"`
}

// ListingPage is ?page=N for a listing page that exists; anything else is page 1.
func ListingPage(query string) int {
	if n, err := strconv.Atoi(query); err == nil && n >= 1 && n <= PageCount && strconv.Itoa(n) == query {
		return n
	}
	return 1
}

var canonicalID = regexp.MustCompile(`^[1-9][0-9]{0,5}$`)

// ProductID is the id in a product URL's {id} when it names a product of the catalog: only
// canonical decimal ids ("42", not "042" or "4.2").
func ProductID(param string) (int, bool) {
	if !canonicalID.MatchString(param) {
		return 0, false
	}
	id, _ := strconv.Atoi(param)
	return id, id >= MinID && id <= MaxID
}

// Product is one catalog entry, as the pages take it.
type Product struct {
	ID             int      `json:"id"`
	SKU            string   `json:"sku"`
	Name           string   `json:"name"`
	Brand          string   `json:"brand"`
	Description    string   `json:"description"`
	PriceCents     int      `json:"priceCents"`
	ListPriceCents *int     `json:"listPriceCents"`
	Currency       string   `json:"currency"`
	Stock          int      `json:"stock"`
	ShipsInDays    int      `json:"shipsInDays"`
	Rating         float64  `json:"rating"`
	ReviewCount    int      `json:"reviewCount"`
	Tags           []string `json:"tags"`
	Color          string   `json:"color"`
}

// mulberry32 is a 32-bit seeded PRNG returning floats in [0, 1).
func mulberry32(seed uint32) func() float64 {
	a := seed
	return func() float64 {
		a += 0x6d2b79f5
		t := a
		t = (t ^ (t >> 15)) * (t | 1)
		t ^= t + (t^(t>>7))*(t|61)
		return float64(t^(t>>14)) / 4294967296
	}
}

var (
	adjectives = []string{"Sturdy", "Compact", "Featherlight", "Classic", "Weatherproof", "Handcrafted", "Modular",
		"Everyday", "Vintage", "Ergonomic", "Foldable", "Insulated", "Recycled", "Deluxe", "Minimal",
		"Rugged", "Silent", "Bright", "Cozy", "Nimble"}
	materials = []string{"Oak", "Steel", "Linen", "Ceramic", "Bamboo", "Wool", "Copper", "Canvas", "Walnut", "Glass",
		"Leather", "Cotton", "Granite", "Aluminium", "Cork"}
	nouns = []string{"Desk Lamp", "Backpack", "Teapot", "Notebook", "Headphones", "Water Bottle", "Chair",
		"Wall Clock", "Blanket", "Mug", "Bike Light", "Plant Pot", "Pen Set", "Tote Bag", "Speaker",
		"Cutting Board", "Umbrella", "Wallet", "Lantern", "Kettle"}
	benefits = []string{"built to last for years", "easy to clean", "perfect for small spaces", "a favourite gift",
		"designed for daily use", "made in small batches", "tested by our team", "light enough to carry",
		"quiet and efficient", "kind to the planet"}
	details = []string{"Each piece is checked by hand before it leaves the workshop",
		"Comes with a two-year warranty and free returns within 30 days",
		"Ships in plastic-free packaging that you can compost at home",
		"Designed in Lisbon and assembled by a family business",
		"Pairs well with the rest of the collection",
		"Spare parts are available for as long as we sell it",
		"Wipe with a damp cloth; no special care needed",
		"Reviewers love how it looks after a year of use"}
	brands = []string{"Northwind", "Alder & Co", "Fieldnote", "Kestrel", "Lumen Works", "Tidewater", "Oakhurst", "Paper Crane"}
	tags   = []string{"new", "bestseller", "eco", "gift", "home", "office", "outdoor", "travel", "kitchen", "sale",
		"limited", "handmade"}
)

func pick[T any](rand func() float64, list []T) T {
	return list[int(math.Floor(rand()*float64(len(list))))]
}

func between(rand func() float64, lo, hi int) int {
	return lo + int(math.Floor(rand()*float64(hi-lo+1)))
}

// Generate computes the product with id.
func Generate(id int) Product {
	rand := mulberry32(uint32(uint64(id) * 2654435761))
	adjective, material, noun := pick(rand, adjectives), pick(rand, materials), pick(rand, nouns)
	benefit, detail, brand := pick(rand, benefits), pick(rand, details), pick(rand, brands)
	var chosen []string
	for n := between(rand, 2, 4); len(chosen) < n; {
		if tag := pick(rand, tags); !slices.Contains(chosen, tag) {
			chosen = append(chosen, tag)
		}
	}
	price := between(rand, 4, 400)*100 + pick(rand, []int{0, 49, 95, 99})
	article := "A"
	if strings.ContainsAny(adjective[:1], "AEIOU") {
		article = "An"
	}
	p := Product{
		ID: id, SKU: fmt.Sprintf("SSR-%06d", id), Name: adjective + " " + material + " " + noun, Brand: brand,
		Description: fmt.Sprintf("%s %s %s in %s, %s. %s.", article, strings.ToLower(adjective), strings.ToLower(noun), strings.ToLower(material), benefit, detail),
		PriceCents:  price, Currency: "USD", Tags: chosen,
	}
	if slices.Contains(chosen, "sale") {
		was := int(math.Floor(float64(price)*1.25/100+0.5))*100 + 99
		p.ListPriceCents = &was
	}
	p.Stock = between(rand, 0, 120)
	p.ShipsInDays = between(rand, 1, 10)
	p.Rating = float64(between(rand, 25, 50)) / 10
	p.ReviewCount = between(rand, 0, 2500)
	p.Color = fmt.Sprintf("hsl(%d %d%% %d%%)", between(rand, 0, 359), between(rand, 35, 75), between(rand, 55, 80))
	return p
}

// RelatedIDs are count other products' ids, chosen from id.
func RelatedIDs(id, count int) []int {
	rand := mulberry32(uint32(id) ^ 0x5bd1e995)
	var ids []int
	for len(ids) < count {
		if other := between(rand, MinID, MaxID); other != id && !slices.Contains(ids, other) {
			ids = append(ids, other)
		}
	}
	return ids
}

// Review is one of a product's reviews, as app/src/reviews.js computes it.
type Review struct {
	Author string `json:"author"`
	Stars  int    `json:"stars"`
	Text   string `json:"text"`
}

var (
	reviewAuthors = []string{"Ada", "Grace", "Linus", "Ken", "Barbara", "Edsger", "Margaret", "Dennis"}
	reviewTexts   = []string{
		"Exactly as described, and it arrived early.",
		"Solid build; I would buy it again.",
		"Good value for the price.",
		"The colour is a little darker than in the photo.",
		"Works well, though the manual could be clearer.",
	}
)

// Reviews are product id's reviews: the shop's slow data (a reviews service, in a real
// shop), which its product page streams in as a deferred value.
func Reviews(id int) []Review {
	reviews := make([]Review, 3)
	for i := range reviews {
		n := id*7 + i*3
		reviews[i] = Review{Author: reviewAuthors[n%len(reviewAuthors)], Stars: 3 + n%3, Text: reviewTexts[n%len(reviewTexts)]}
	}
	return reviews
}
