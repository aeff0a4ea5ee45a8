package io.github.pirexbench.jparest.customer;

/** The body of the change-name operation: {@code {"firstName": "...", "lastName": "..."}}. */
public record NameChange(String firstName, String lastName) {

  /** Why this change cannot be applied, or null when it can. */
  String problem() {
    if (firstName == null || firstName.isBlank() || lastName == null || lastName.isBlank()) {
      return "firstName and lastName are required";
    }
    if (firstName.length() > Customer.NAME_LENGTH || lastName.length() > Customer.NAME_LENGTH) {
      return "firstName and lastName have at most " + Customer.NAME_LENGTH + " characters";
    }
    return null;
  }
}
