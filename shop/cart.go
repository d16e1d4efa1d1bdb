package main

import (
	"net/http"
	"strconv"
)

// cartLine is the visitor's line for one product: a value per request of the partially
// prerendered product page, read from the visitor's session and never stored.
type cartLine struct {
	User     string `json:"user"`
	Quantity int    `json:"quantity"`
}

// cartLineOf is the line of the product at r's path in the visitor's cart: the session's
// user, and the quantity in the cookie cart_<id> (the demo's stand-in for a cart store).
func cartLineOf(r *http.Request) (cartLine, error) {
	user, _ := session(r)
	line := cartLine{User: user}
	if c, err := r.Cookie("cart_" + r.PathValue("id")); err == nil {
		line.Quantity, _ = strconv.Atoi(c.Value)
		line.Quantity = max(0, line.Quantity)
	}
	return line, nil
}
