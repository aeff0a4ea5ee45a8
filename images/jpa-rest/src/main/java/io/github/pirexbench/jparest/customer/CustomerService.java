package io.github.pirexbench.jparest.customer;

import java.util.Optional;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** The two database operations; the random customer needs no service. */
@Service
public class CustomerService {

  private final CustomerRepository customers;

  public CustomerService(CustomerRepository customers) {
    this.customers = customers;
  }

  /** Reads a customer by number (one read-only transaction: SELECT by primary key). */
  public Optional<Customer> read(long id) {
    return customers.findById(id);
  }

  /**
   * Changes first and last name of a customer in one transaction: SELECT by primary key, then
   * Hibernate's dirty check writes the UPDATE at commit.
   */
  @Transactional
  public Optional<Customer> rename(long id, String firstName, String lastName) {
    Optional<Customer> customer = customers.findById(id);
    customer.ifPresent(c -> c.rename(firstName, lastName));
    return customer;
  }
}
