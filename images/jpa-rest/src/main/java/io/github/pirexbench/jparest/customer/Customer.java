package io.github.pirexbench.jparest.customer;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.LocalDate;

/**
 * A customer, identified by its customer number. The table {@code customer} is created and filled
 * by the loader (sql/schema.sql, sql/load.sql), never by the service; the column sizes match it.
 */
@Entity
@Table(name = "customer")
public class Customer {

  @Id
  @Column(name = "id")
  private Long id;

  @Column(name = "first_name", nullable = false, length = Customer.NAME_LENGTH)
  private String firstName;

  @Column(name = "last_name", nullable = false, length = Customer.NAME_LENGTH)
  private String lastName;

  @Column(name = "street", nullable = false, length = 60)
  private String street;

  @Column(name = "zip", nullable = false, length = 10)
  private String zip;

  @Column(name = "city", nullable = false, length = Customer.NAME_LENGTH)
  private String city;

  @Column(name = "date_of_birth", nullable = false)
  private LocalDate dateOfBirth;

  /** The longest first name, last name or city the table accepts. */
  public static final int NAME_LENGTH = 40;

  protected Customer() {
    // for JPA
  }

  public Customer(
      Long id,
      String firstName,
      String lastName,
      String street,
      String zip,
      String city,
      LocalDate dateOfBirth) {
    this.id = id;
    this.firstName = firstName;
    this.lastName = lastName;
    this.street = street;
    this.zip = zip;
    this.city = city;
    this.dateOfBirth = dateOfBirth;
  }

  public Long getId() {
    return id;
  }

  public String getFirstName() {
    return firstName;
  }

  public String getLastName() {
    return lastName;
  }

  public String getStreet() {
    return street;
  }

  public String getZip() {
    return zip;
  }

  public String getCity() {
    return city;
  }

  public LocalDate getDateOfBirth() {
    return dateOfBirth;
  }

  /** Changes the first and last name (written at the end of the transaction). */
  public void rename(String firstName, String lastName) {
    this.firstName = firstName;
    this.lastName = lastName;
  }
}
