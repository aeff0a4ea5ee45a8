package io.github.pirexbench.jparest.customer;

import java.time.LocalDate;

/** A customer as the REST operations return it. */
public record CustomerJson(
    long id,
    String firstName,
    String lastName,
    String street,
    String zip,
    String city,
    LocalDate dateOfBirth) {

  static CustomerJson of(Customer c) {
    return new CustomerJson(
        c.getId(),
        c.getFirstName(),
        c.getLastName(),
        c.getStreet(),
        c.getZip(),
        c.getCity(),
        c.getDateOfBirth());
  }
}
