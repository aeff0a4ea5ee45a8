package io.github.pirexbench.jparest.system;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

class RequiredSettingsTests {

  /** application.properties as Spring loads it, plus the given environment variables. */
  private static StandardEnvironment env(Map<String, Object> variables) {
    StandardEnvironment env = new StandardEnvironment();
    env.getPropertySources().remove(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME);
    env.getPropertySources().remove(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME);
    env.getPropertySources().addFirst(new MapPropertySource("systemEnvironment", variables));
    env.getPropertySources()
        .addLast(
            new MapPropertySource(
                "Config resource 'class path resource [application.properties]'",
                Map.of(
                    "spring.datasource.url", "${DB_URL:}",
                    "spring.datasource.username", "${DB_USER:}",
                    "spring.datasource.password", "${DB_PASSWORD:}")));
    return env;
  }

  @Test
  void nothingSetNamesAllThree() {
    assertEquals(
        List.of("DB_URL", "DB_USER", "DB_PASSWORD"), RequiredSettings.missing(env(Map.of())));
  }

  @Test
  void allSetIsComplete() {
    assertEquals(
        List.of(),
        RequiredSettings.missing(
            env(
                Map.of(
                    "DB_URL", "jdbc:postgresql://127.0.0.1/pirex",
                    "DB_USER", "pirex",
                    "DB_PASSWORD", ""))));
  }

  @Test
  void springNamesCountToo() {
    assertEquals(
        List.of(),
        RequiredSettings.missing(
            env(
                Map.of(
                    "spring.datasource.url", "jdbc:postgresql://127.0.0.1/pirex",
                    "spring.datasource.username", "pirex",
                    "spring.datasource.password", "secret"))));
  }
}
