package io.github.pirexbench.jparest.customer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.LocalDate;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

class RandomCustomersTests {

  @Test
  void randomCustomersFitTheTable() {
    RandomGenerator seeded = RandomGenerator.of("L64X128MixRandom");
    RandomCustomers customers = new RandomCustomers(() -> seeded);
    for (int i = 0; i < 1000; i++) {
      Customer c = customers.next();
      assertTrue(c.getId() >= 1 && c.getId() <= 10_000_000L);
      assertTrue(RandomCustomers.FIRST_NAMES.contains(c.getFirstName()));
      assertTrue(RandomCustomers.LAST_NAMES.contains(c.getLastName()));
      assertTrue(c.getStreet().length() <= 60);
      assertEquals(5, c.getZip().length());
      assertTrue(!c.getDateOfBirth().isBefore(LocalDate.of(1940, 1, 1)));
    }
  }
}
