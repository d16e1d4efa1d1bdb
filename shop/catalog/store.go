package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	_ "modernc.org/sqlite" // pure Go: no cgo
)

// Store is the catalog in SQLite. It is safe for concurrent use.
type Store struct {
	db *sql.DB
	// listing is prepared once: the listing query runs on every uncached render of the home
	// page, and preparing it each time is SQL parsing that render does not need.
	listing *sql.Stmt
}

const schema = `CREATE TABLE IF NOT EXISTS products (
	id               INTEGER PRIMARY KEY,
	sku              TEXT NOT NULL,
	name             TEXT NOT NULL,
	brand            TEXT NOT NULL,
	description      TEXT NOT NULL,
	price_cents      INTEGER NOT NULL,
	list_price_cents INTEGER,
	currency         TEXT NOT NULL,
	stock            INTEGER NOT NULL,
	ships_in_days    INTEGER NOT NULL,
	rating           REAL NOT NULL,
	review_count     INTEGER NOT NULL,
	tags             TEXT NOT NULL, -- a JSON array
	color            TEXT NOT NULL
)`

const columns = `id, sku, name, brand, description, price_cents, list_price_cents, currency, stock,
	ships_in_days, rating, review_count, tags, color`

// Open opens (creating it if needed) the database at path and seeds the catalog into it on
// first use.
func Open(ctx context.Context, path string) (*Store, error) {
	// WAL: readers never wait for a writer; busy_timeout: a writer waits instead of failing.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	s := &Store{db: db}
	if err := s.seed(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.listing, err = db.PrepareContext(ctx, "SELECT "+columns+" FROM products WHERE id BETWEEN ? AND ? ORDER BY id"); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (s *Store) seed(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM products").Scan(&n); err != nil || n > 0 {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	insert, err := tx.PrepareContext(ctx, "INSERT INTO products ("+columns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	for id := MinID; id <= MaxID; id++ {
		p := Generate(id)
		tagsJSON, _ := json.Marshal(p.Tags)
		if _, err := insert.ExecContext(ctx, p.ID, p.SKU, p.Name, p.Brand, p.Description, p.PriceCents, p.ListPriceCents,
			p.Currency, p.Stock, p.ShipsInDays, p.Rating, p.ReviewCount, string(tagsJSON), p.Color); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// DB is the database, for the shop's own queries.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Listing returns the products of one listing page (1-based).
func (s *Store) Listing(ctx context.Context, page int) ([]Product, error) {
	first := MinID + (page-1)*PageSize
	rows, err := s.listing.QueryContext(ctx, first, first+PageSize-1)
	if err != nil {
		return nil, err
	}
	return scan(rows, PageSize)
}

// Product returns the product with id and its related products, or nil when there is none.
func (s *Store) Product(ctx context.Context, id int) (*Product, []Product, error) {
	found, err := s.query(ctx, "SELECT "+columns+" FROM products WHERE id = ?", id)
	if err != nil || len(found) == 0 {
		return nil, nil, err
	}
	ids := RelatedIDs(id, 8)
	args := make([]any, len(ids))
	for i, v := range ids {
		args[i] = v
	}
	rows, err := s.query(ctx, "SELECT "+columns+" FROM products WHERE id IN (?"+strings.Repeat(", ?", len(ids)-1)+")", args...)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[int]Product, len(rows))
	for _, p := range rows {
		byID[p.ID] = p
	}
	related := make([]Product, 0, len(ids))
	for _, v := range ids {
		if p, ok := byID[v]; ok {
			related = append(related, p)
		}
	}
	return &found[0], related, nil
}

func (s *Store) query(ctx context.Context, query string, args ...any) ([]Product, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scan(rows, 0)
}

// scan reads rows into products, expecting about n of them.
func scan(rows *sql.Rows, n int) ([]Product, error) {
	defer rows.Close()
	products := make([]Product, 0, n)
	for rows.Next() {
		var p Product
		var tagsJSON string
		if err := rows.Scan(&p.ID, &p.SKU, &p.Name, &p.Brand, &p.Description, &p.PriceCents, &p.ListPriceCents,
			&p.Currency, &p.Stock, &p.ShipsInDays, &p.Rating, &p.ReviewCount, &tagsJSON, &p.Color); err != nil {
			return nil, err
		}
		var err error
		if p.Tags, err = parseTags(tagsJSON); err != nil {
			return nil, fmt.Errorf("product %d: tags: %w", p.ID, err)
		}
		products = append(products, p)
	}
	return products, rows.Err()
}

// parseTags reads the tags column, a JSON array of strings. The column as seed writes it
// (json.Marshal: no spaces, and these words need no escapes) is split without a decoder,
// which was a fifth of the listing query's time; anything else goes through encoding/json.
func parseTags(text string) ([]string, error) {
	if text == "[]" {
		return []string{}, nil
	}
	if inner, ok := strings.CutPrefix(text, `["`); ok {
		if inner, ok := strings.CutSuffix(inner, `"]`); ok && strings.IndexFunc(inner, needsDecoder) < 0 {
			tags := strings.Split(inner, `","`)
			if !slices.ContainsFunc(tags, func(t string) bool { return strings.Contains(t, `"`) }) {
				return tags, nil
			}
		}
	}
	var tags []string
	err := json.Unmarshal([]byte(text), &tags)
	return tags, err
}

// needsDecoder: an escape, a control character (invalid in JSON) or invalid UTF-8 (which
// encoding/json replaces).
func needsDecoder(r rune) bool { return r == '\\' || r < 0x20 || r == utf8.RuneError }
