-- The customer table of ICPE'18 Experiment 3 (the entity io.github.pirexbench.jparest.customer.Customer).
-- Created by load.sql, which adds the primary key customer_pkey (id) after the rows are in: one
-- index build is several times faster than maintaining the index row by row.
-- About 100 bytes a row with its index: 10,000,000 rows (the paper's "about 1 GB") take ~1.1 GB.
CREATE TABLE customer (
	id bigint NOT NULL,
	first_name varchar(40) NOT NULL,
	last_name varchar(40) NOT NULL,
	street varchar(60) NOT NULL,
	zip varchar(10) NOT NULL,
	city varchar(40) NOT NULL,
	date_of_birth date NOT NULL
);
