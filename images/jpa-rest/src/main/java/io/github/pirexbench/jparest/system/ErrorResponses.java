package io.github.pirexbench.jparest.system;

import java.util.Map;
import org.springframework.dao.DataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.transaction.TransactionException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Database failures (PostgreSQL restarting, unreachable, pool exhausted) become 503 responses with
 * a one-line reason, inside the filter chain: the driver records them as failed requests with their
 * service time, and the error text says what went wrong.
 */
@RestControllerAdvice
public class ErrorResponses {

  @ExceptionHandler({DataAccessException.class, TransactionException.class})
  public ResponseEntity<Map<String, String>> databaseUnavailable(RuntimeException e) {
    return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
        .body(Map.of("error", oneLine(e)));
  }

  static String oneLine(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String text = e.getClass().getSimpleName();
    if (root != e) {
      text += " <- " + root.getClass().getSimpleName();
    }
    String message = root.getMessage();
    if (message != null) {
      text += ": " + message;
    }
    return text.replaceAll("\\s+", " ");
  }
}
