package io.github.pirexbench.jparest.system;

import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.PropertySource;

/**
 * Fails fast, before any bean is created, when the database settings are missing: they come from
 * the environment only and are never baked into the jar or the image.
 *
 * <p>{@code DB_URL} and {@code DB_USER} must be non-empty; {@code DB_PASSWORD} must be set but may
 * be empty (trust or peer authentication). Spring's own names ({@code SPRING_DATASOURCE_URL}, ...)
 * are accepted too, as they end up in the same properties.
 */
public class RequiredSettings implements ApplicationListener<ApplicationEnvironmentPreparedEvent> {

  /** Exit status of a start without the required settings (as a usage error). */
  public static final int EXIT_MISSING_SETTINGS = 2;

  @Override
  public void onApplicationEvent(ApplicationEnvironmentPreparedEvent event) {
    List<String> missing = missing(event.getEnvironment());
    if (!missing.isEmpty()) {
      System.err.println(
          "jpa-rest: missing database settings: "
              + String.join(", ", missing)
              + ". Set DB_URL (e.g. jdbc:postgresql://192.0.2.10:5432/pirex), DB_USER and"
              + " DB_PASSWORD in the environment (DB_PASSWORD may be empty).");
      System.exit(EXIT_MISSING_SETTINGS);
    }
  }

  /** The names of the missing settings, empty when all are there. */
  public static List<String> missing(ConfigurableEnvironment env) {
    List<String> missing = new ArrayList<>();
    if (isBlank(env.getProperty("spring.datasource.url"))) {
      missing.add("DB_URL");
    }
    if (isBlank(env.getProperty("spring.datasource.username"))) {
      missing.add("DB_USER");
    }
    if (!setOutsideConfigFiles(env, "DB_PASSWORD", "spring.datasource.password")) {
      missing.add("DB_PASSWORD");
    }
    return missing;
  }

  /**
   * Whether one of the names is set by a source other than the configuration files (which map
   * {@code spring.datasource.password} to an empty default): the environment, a system property
   * or the command line.
   */
  private static boolean setOutsideConfigFiles(ConfigurableEnvironment env, String... names) {
    for (PropertySource<?> source : env.getPropertySources()) {
      if (source.getName().startsWith("Config resource")
          || source.getName().equals("configurationProperties")) {
        continue;
      }
      for (String name : names) {
        if (source.containsProperty(name)) {
          return true;
        }
      }
    }
    return false;
  }

  private static boolean isBlank(String s) {
    return s == null || s.isBlank();
  }
}
