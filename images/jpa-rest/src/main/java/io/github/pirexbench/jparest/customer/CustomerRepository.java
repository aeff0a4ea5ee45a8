package io.github.pirexbench.jparest.customer;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data JPA access to the customer table (findById is the read operation). */
public interface CustomerRepository extends JpaRepository<Customer, Long> {}
