package io.github.pirexbench.jparest;

import io.github.pirexbench.jparest.system.RequiredSettings;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The JPA REST service of ICPE'18 Experiment 3: a very simple customer database behind three REST
 * operations (see {@link io.github.pirexbench.jparest.customer.CustomerController}).
 *
 * <p>The database connection comes from the environment only ({@code DB_URL}, {@code DB_USER},
 * {@code DB_PASSWORD}); the service refuses to start without them. The schema and the data belong
 * to the loader ({@code pirex-load-customers}), never to the service.
 */
@SpringBootApplication
public class JpaRestApplication {

  public static void main(String[] args) {
    SpringApplication app = new SpringApplication(JpaRestApplication.class);
    app.addListeners(new RequiredSettings());
    app.run(args);
  }
}
