package io.github.pirexbench.jparest.customer;

import java.util.Map;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The three operations of ICPE'18 Experiment 3, all answering with the customer as JSON:
 *
 * <ul>
 *   <li>{@code POST /customers/random}: create a random customer and return it, without touching
 *       the database (the baseline);
 *   <li>{@code GET /customers/{id}}: read a customer by its number (404 when there is none);
 *   <li>{@code PUT /customers/{id}/name} with {@code {"firstName": "...", "lastName": "..."}}:
 *       change the customer's first and last name in one transaction (404, 400 on a bad body).
 * </ul>
 *
 * No response names this host (no Location header, no absolute URL), so the service answers the
 * same behind Docker's port mapping as natively: container networking cannot send the driver to an
 * address it cannot reach.
 */
@RestController
@RequestMapping("/customers")
public class CustomerController {

  private final CustomerService service;
  private final RandomCustomers randomCustomers;

  public CustomerController(CustomerService service, RandomCustomers randomCustomers) {
    this.service = service;
    this.randomCustomers = randomCustomers;
  }

  @PostMapping("/random")
  public CustomerJson createRandom() {
    return CustomerJson.of(randomCustomers.next());
  }

  @GetMapping("/{id}")
  public ResponseEntity<?> read(@PathVariable long id) {
    return service.read(id)
        .<ResponseEntity<?>>map(c -> ResponseEntity.ok(CustomerJson.of(c)))
        .orElseGet(() -> notFound(id));
  }

  @PutMapping("/{id}/name")
  public ResponseEntity<?> changeName(@PathVariable long id, @RequestBody NameChange change) {
    String problem = change.problem();
    if (problem != null) {
      return ResponseEntity.badRequest().body(Map.of("error", problem));
    }
    return service.rename(id, change.firstName(), change.lastName())
        .<ResponseEntity<?>>map(c -> ResponseEntity.ok(CustomerJson.of(c)))
        .orElseGet(() -> notFound(id));
  }

  private static ResponseEntity<?> notFound(long id) {
    return ResponseEntity.status(404).body(Map.of("error", "no customer " + id));
  }
}
