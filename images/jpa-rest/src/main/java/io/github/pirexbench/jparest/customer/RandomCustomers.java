package io.github.pirexbench.jparest.customer;

import java.time.LocalDate;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;
import org.springframework.stereotype.Component;

/**
 * Makes random customers in memory, without the database: the baseline operation of the paper
 * ("generated a random customer entry and returned it without accessing the database at all").
 * The pools of names are those the loader uses (sql/load.sql).
 */
@Component
public class RandomCustomers {

  static final List<String> FIRST_NAMES =
      List.of(
          "Anna", "Ben", "Clara", "David", "Emma", "Felix", "Greta", "Hannah", "Ida", "Jonas",
          "Karl", "Lena", "Marie", "Noah", "Olga", "Paul", "Rosa", "Simon", "Tilda", "Uwe");
  static final List<String> LAST_NAMES =
      List.of(
          "Bauer", "Becker", "Fischer", "Hoffmann", "Koch", "Meyer", "Mueller", "Richter",
          "Schaefer", "Schmidt", "Schneider", "Schulz", "Wagner", "Weber", "Wolf", "Zimmermann");
  static final List<String> STREETS =
      List.of(
          "Hauptstrasse", "Schulstrasse", "Gartenweg", "Bahnhofstrasse", "Dorfstrasse",
          "Bergweg", "Kirchplatz", "Lindenallee");
  static final List<String> CITIES =
      List.of(
          "Berlin", "Hildesheim", "Kiel", "Hamburg", "Hannover", "Edinburgh", "Bolzano",
          "Goettingen");

  /** Each request thread draws from its own generator (no contention between threads). */
  private final Supplier<RandomGenerator> randoms;

  public RandomCustomers() {
    this(ThreadLocalRandom::current);
  }

  RandomCustomers(Supplier<RandomGenerator> randoms) {
    this.randoms = randoms;
  }

  /** A new random customer with a random customer number; nothing is stored. */
  public Customer next() {
    RandomGenerator random = randoms.get();
    return new Customer(
        1 + random.nextLong(10_000_000L),
        pick(random, FIRST_NAMES),
        pick(random, LAST_NAMES),
        pick(random, STREETS) + " " + (1 + random.nextInt(200)),
        String.format("%05d", random.nextInt(100_000)),
        pick(random, CITIES),
        LocalDate.of(1940, 1, 1).plusDays(random.nextInt(365 * 65)));
  }

  private static String pick(RandomGenerator random, List<String> pool) {
    return pool.get(random.nextInt(pool.size()));
  }
}
