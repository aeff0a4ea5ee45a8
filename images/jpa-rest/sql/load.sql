-- Loads :rows customers into the customer table, once: psql -v rows=N -f load.sql
-- Idempotent: when the table already holds a completed load of the same N (recorded in
-- pirex_load), nothing is done. Another N, or a load that was interrupted, drops the table and
-- loads it again. Concurrent loaders (variants sharing one database host) queue on an advisory
-- lock, so the second finds the first one's load.
-- The rows are the same on every machine: every column is computed from the customer number
-- (the name pools are those of RandomCustomers.java). After the load, VACUUM (FREEZE, ANALYZE)
-- sets the hint bits and the visibility map and gathers statistics, so that the first reads of the
-- experiment do not write pages back.
-- Prints one line, e.g.
-- pirex-load-customers: status=loaded rows=1000000 seconds=4.321 rows_per_s=231428 insert_s=2.1 index_s=0.6 vacuum_s=1.6 total_bytes=112345678 server_version=15.14_(Debian_15.14-0+deb12u1)
-- (status=present with the figures of the earlier load when there was nothing to do).
\set ON_ERROR_STOP on
\set QUIET on
SET client_min_messages = warning;

SELECT pg_advisory_lock(hashtext('pirex-load-customers')) \gset lock_

CREATE TABLE IF NOT EXISTS pirex_load (
	table_name text PRIMARY KEY,
	rows bigint NOT NULL,
	seconds double precision NOT NULL,
	insert_s double precision NOT NULL,
	index_s double precision NOT NULL,
	vacuum_s double precision NOT NULL,
	loaded_at timestamptz NOT NULL
);

SELECT EXISTS (SELECT 1 FROM pirex_load WHERE table_name = 'customer' AND rows = :rows)
	AND to_regclass('customer') IS NOT NULL AS loaded \gset

\if :loaded
\set status present
\else
\set status loaded
SELECT clock_timestamp() AS t0 \gset
BEGIN;
DELETE FROM pirex_load WHERE table_name = 'customer';
DROP TABLE IF EXISTS customer;
\ir schema.sql
-- h: a multiplicative hash of the customer number (Knuth), which picks the values.
INSERT INTO customer (id, first_name, last_name, street, zip, city, date_of_birth)
SELECT
	i,
	(ARRAY['Anna', 'Ben', 'Clara', 'David', 'Emma', 'Felix', 'Greta', 'Hannah', 'Ida', 'Jonas',
		'Karl', 'Lena', 'Marie', 'Noah', 'Olga', 'Paul', 'Rosa', 'Simon', 'Tilda', 'Uwe'])[1 + h % 20],
	(ARRAY['Bauer', 'Becker', 'Fischer', 'Hoffmann', 'Koch', 'Meyer', 'Mueller', 'Richter',
		'Schaefer', 'Schmidt', 'Schneider', 'Schulz', 'Wagner', 'Weber', 'Wolf', 'Zimmermann'])[1 + h / 20 % 16],
	(ARRAY['Hauptstrasse', 'Schulstrasse', 'Gartenweg', 'Bahnhofstrasse', 'Dorfstrasse',
		'Bergweg', 'Kirchplatz', 'Lindenallee'])[1 + h / 320 % 8] || ' ' || (1 + h / 2560 % 200),
	lpad((h / 7 % 100000)::text, 5, '0'),
	(ARRAY['Berlin', 'Hildesheim', 'Kiel', 'Hamburg', 'Hannover', 'Edinburgh', 'Bolzano',
		'Goettingen'])[1 + h / 512000 % 8],
	date '1940-01-01' + (h / 13 % (365 * 65))::integer
FROM generate_series(1::bigint, :rows::bigint) AS i,
	LATERAL (SELECT i * 2654435761 % 4294967296 AS h) AS hash;
SELECT clock_timestamp() AS t1 \gset
ALTER TABLE customer ADD CONSTRAINT customer_pkey PRIMARY KEY (id);
COMMIT;
SELECT clock_timestamp() AS t2 \gset
VACUUM (FREEZE, ANALYZE) customer;
INSERT INTO pirex_load
SELECT 'customer', :rows,
	extract(epoch FROM now2 - :'t0'::timestamptz),
	extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz),
	extract(epoch FROM :'t2'::timestamptz - :'t1'::timestamptz),
	extract(epoch FROM now2 - :'t2'::timestamptz),
	now2
FROM (SELECT clock_timestamp() AS now2) AS t;
\endif

SELECT format('pirex-load-customers: status=%s rows=%s seconds=%s rows_per_s=%s insert_s=%s index_s=%s vacuum_s=%s total_bytes=%s server_version=%s',
	:'status', rows, round(seconds::numeric, 3), round(rows / greatest(seconds, 1e-9)),
	round(insert_s::numeric, 3), round(index_s::numeric, 3), round(vacuum_s::numeric, 3),
	pg_total_relation_size('customer'), replace(current_setting('server_version'), ' ', '_')) AS line
FROM pirex_load WHERE table_name = 'customer' \gset
\echo :line

SELECT pg_advisory_unlock(hashtext('pirex-load-customers')) \gset lock_
