-- The SQL report desk's sample database: a small shop. Loaded once into
-- .trellis/sql-report-desk.db (see desk-database.ts); the db plugin opens it read-only.
CREATE TABLE customers (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL,
  country TEXT NOT NULL,
  joined  TEXT NOT NULL
);

CREATE TABLE products (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  category    TEXT NOT NULL,
  price_cents INTEGER NOT NULL
);

CREATE TABLE orders (
  id           INTEGER PRIMARY KEY,
  customer_id  INTEGER NOT NULL REFERENCES customers (id),
  ordered_at   TEXT NOT NULL,
  status       TEXT NOT NULL CHECK (status IN ('paid', 'refunded', 'pending'))
);

CREATE TABLE order_items (
  order_id   INTEGER NOT NULL REFERENCES orders (id),
  product_id INTEGER NOT NULL REFERENCES products (id),
  quantity   INTEGER NOT NULL,
  PRIMARY KEY (order_id, product_id)
);

INSERT INTO customers (id, name, country, joined) VALUES
  (1, 'Ada Lovelace',     'UK', '2024-01-15'),
  (2, 'Grace Hopper',     'US', '2024-02-03'),
  (3, 'Alan Turing',      'UK', '2024-03-22'),
  (4, 'Margaret Hamilton','US', '2024-04-09'),
  (5, 'Edsger Dijkstra',  'NL', '2024-05-30'),
  (6, 'Barbara Liskov',   'US', '2024-06-12');

INSERT INTO products (id, name, category, price_cents) VALUES
  (1, 'Mechanical keyboard', 'hardware', 12900),
  (2, 'Trackball',           'hardware',  7900),
  (3, 'Monitor arm',         'hardware',  9900),
  (4, 'SQL pocket guide',    'books',     2400),
  (5, 'Compilers textbook',  'books',     8900),
  (6, 'Cloud credits',       'services', 5000);

INSERT INTO orders (id, customer_id, ordered_at, status) VALUES
  (1, 1, '2025-01-04', 'paid'),
  (2, 2, '2025-01-09', 'paid'),
  (3, 3, '2025-01-17', 'refunded'),
  (4, 1, '2025-02-02', 'paid'),
  (5, 4, '2025-02-11', 'paid'),
  (6, 5, '2025-02-20', 'pending'),
  (7, 2, '2025-03-01', 'paid'),
  (8, 6, '2025-03-08', 'paid'),
  (9, 4, '2025-03-15', 'paid'),
  (10, 3, '2025-03-29', 'paid');

INSERT INTO order_items (order_id, product_id, quantity) VALUES
  (1, 1, 1), (1, 4, 2),
  (2, 5, 1), (2, 6, 4),
  (3, 2, 1),
  (4, 3, 2), (4, 6, 1),
  (5, 1, 2), (5, 5, 1),
  (6, 4, 3),
  (7, 2, 1), (7, 3, 1),
  (8, 6, 10),
  (9, 4, 1),
  (10, 5, 2), (10, 1, 1);
